package scatter_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// Order is an item of the examples' table: the day's orders, written
// under day = "2014-07-09.<suffix>" with the suffix calculated from ID.
type Order struct {
	Day   string `dynamodbav:"day"`
	Time  string `dynamodbav:"time"`
	ID    string `dynamodbav:"id"`
	Total int    `dynamodbav:"total"`
}

// exampleTable starts the test server, creates a table keyed (day, time)
// and writes ten orders over four shards. The caller calls cleanup.
func exampleTable() (c *dynamodb.Client, table string, cleanup func()) {
	ctx := context.Background()
	srv, err := ddbtest.Default()
	if err != nil {
		log.Fatal(err)
	}
	c = srv.Client()
	in, err := ddbtest.TableInput("day:S", "time:S")
	if err != nil {
		log.Fatal(err)
	}
	if table, err = srv.NewTable(ctx, in); err != nil {
		log.Fatal(err)
	}
	strategy := shard.Hash(4)
	for i := range 10 {
		id := fmt.Sprintf("order-%02d", i+1)
		o := Order{Day: shard.Key("2014-07-09", strategy.Pick(id)), Time: fmt.Sprintf("2014-07-09T%02d:00:00Z", 8+i), ID: id, Total: 10 * (i + 1)}
		item, err := attributevalue.MarshalMap(o)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			log.Fatal(err)
		}
	}
	return c, table, func() {
		c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}
}

// All reads the whole day, every shard in parallel, merged in time order.
func ExampleScatter_All() {
	client, table, cleanup := exampleTable()
	defer cleanup()

	s := scatter.New(client)
	q := scatter.Query{
		Table: table, PartitionKey: "day", SortKey: "time",
		Base: "2014-07-09", Strategy: shard.Hash(4),
		Filter: "#total >= :min", Names: map[string]string{"#total": "total"},
		Values: map[string]types.AttributeValue{":min": &types.AttributeValueMemberN{Value: "30"}},
	}
	for it, err := range s.All(context.TODO(), q) {
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
	client, table, cleanup := exampleTable()
	defer cleanup()

	s := scatter.New(client, func(o *scatter.Options) {
		o.CursorKey = []byte("sign cursors handed to clients")
	})
	q := scatter.Query{
		Table: table, PartitionKey: "day", SortKey: "time",
		Base: "2014-07-09", Strategy: shard.Hash(4), Descending: true,
	}
	var cursor scatter.Cursor // from the client's request; empty at first
	for page := 1; ; page++ {
		items, next, err := s.Page(context.TODO(), q, 4, cursor)
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

// Lookup finds an order by its sort key without knowing its shard, as
// under shard.Random, with one BatchGetItem per 100 shards.
func ExampleScatter_Lookup() {
	client, table, cleanup := exampleTable()
	defer cleanup()

	s := scatter.New(client)
	q := scatter.Query{Table: table, PartitionKey: "day", SortKey: "time", Base: "2014-07-09", Strategy: shard.Random(4)}
	items, err := s.Lookup(context.TODO(), q, &types.AttributeValueMemberS{Value: "2014-07-09T12:00:00Z"})
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
