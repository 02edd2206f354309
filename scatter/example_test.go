package scatter_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// Order is an item of the examples' table: one order of the day, stored
// under day = "2014-07-09.<suffix>" with the suffix calculated from its
// id, the sort key.
type Order struct {
	ID    string `dynamodbav:"id"`
	Time  string `dynamodbav:"time"`
	Total int    `dynamodbav:"total"`
}

// ordersLayout describes the examples' table: orders under the day
// "2014-07-09", spread over four shards by a hash of their id.
func ordersLayout(table string) shard.Layout {
	return shard.Layout{Table: table, PartitionKey: "day", SortKey: "id", Strategy: shard.Hash(4)}
}

// exampleServer starts a local DynamoDB, creates the orders table from
// its layout and writes ten orders of the day through shard.Table, which
// also records the layout. The caller closes the server.
func exampleServer() (*dynashardtest.Server, *dynamodb.Client, shard.Layout) {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	layout := ordersLayout(dynashardtest.TableName("orders"))
	in, err := layout.CreateTableInput()
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.CreateTable(ctx, in); err != nil {
		log.Fatal(err)
	}
	client := srv.Client()
	orders, err := shard.NewTable[Order](client, layout)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 10 {
		o := Order{ID: fmt.Sprintf("order-%02d", i+1), Time: fmt.Sprintf("2014-07-09T%02d:00:00Z", 8+i), Total: 10 * (i + 1)}
		if err := orders.Put(ctx, "2014-07-09", o); err != nil {
			log.Fatal(err)
		}
	}
	return srv, client, layout
}

// All reads the whole day, every shard in parallel, merged in id order
// (which is also time order here), with a filter built by the SDK's
// expression package.
func ExampleScatter_All() {
	srv, client, layout := exampleServer()
	defer srv.Close()

	s, err := scatter.New(client, layout)
	if err != nil {
		log.Fatal(err)
	}
	e, err := expression.NewBuilder().
		WithFilter(expression.Name("total").GreaterThanEqual(expression.Value(30))).
		Build()
	if err != nil {
		log.Fatal(err)
	}
	for it, err := range s.All(context.TODO(), "2014-07-09", scatter.WithExpression(e)) {
		if err != nil {
			log.Fatal(err)
		}
		var o Order
		if err := it.Unmarshal(&o); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %s %3d (shard %d)\n", o.Time, o.ID, o.Total, it.Suffix)
	}
	// Output:
	// 2014-07-09T10:00:00Z order-03  30 (shard 4)
	// 2014-07-09T11:00:00Z order-04  40 (shard 2)
	// 2014-07-09T12:00:00Z order-05  50 (shard 1)
	// 2014-07-09T13:00:00Z order-06  60 (shard 3)
	// 2014-07-09T14:00:00Z order-07  70 (shard 3)
	// 2014-07-09T15:00:00Z order-08  80 (shard 1)
	// 2014-07-09T16:00:00Z order-09  90 (shard 1)
	// 2014-07-09T17:00:00Z order-10 100 (shard 3)
}

// Page serves the day a few orders at a time, newest first, as a
// stateless HTTP handler would: the cursor goes to the client and back.
func ExampleScatter_Page() {
	srv, client, layout := exampleServer()
	defer srv.Close()

	s, err := scatter.New(client, layout, func(o *scatter.Options) {
		o.CursorKey = []byte("sign cursors handed to clients")
	})
	if err != nil {
		log.Fatal(err)
	}
	newestFirst := func(o *scatter.Options) { o.Descending = true }
	var cursor scatter.Cursor // from the client's request; empty at first
	for page := 1; ; page++ {
		items, next, err := s.Page(context.TODO(), "2014-07-09", 4, cursor, newestFirst)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("page %d:", page)
		for _, it := range items {
			var o Order
			if err := it.Unmarshal(&o); err != nil {
				log.Fatal(err)
			}
			fmt.Print(" ", o.ID)
		}
		fmt.Println()
		if next == "" {
			break
		}
		cursor = next
	}
	// Output:
	// page 1: order-10 order-09 order-08 order-07
	// page 2: order-06 order-05 order-04 order-03
	// page 3: order-02 order-01
}

// Lookup finds an order by its sort key without computing its shard, with
// one BatchGetItem per 100 shards: the way to find an item written under
// shard.Random, shown here on the hash-sharded table.
func ExampleScatter_Lookup() {
	srv, client, layout := exampleServer()
	defer srv.Close()

	s, err := scatter.New(client, layout)
	if err != nil {
		log.Fatal(err)
	}
	items, err := s.Lookup(context.TODO(), "2014-07-09", &types.AttributeValueMemberS{Value: "order-05"})
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range items {
		var o Order
		if err := it.Unmarshal(&o); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s in shard %d, %d BatchGetItem request(s)\n", o.ID, it.Suffix, s.Stats().BatchGets)
	}
	// Output:
	// order-05 in shard 1, 1 BatchGetItem request(s)
}
