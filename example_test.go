package dynashard_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

type Order struct {
	Day    string `dynamodbav:"pk"` // physical key, set by dynashard
	ID     string `dynamodbav:"sk"`
	Amount int    `dynamodbav:"amount"`
}

// The README's quick start, against a local server instead of AWS.
func Example() {
	if err := quickStart(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 2014-07-09.8 42
	// ORD-00000001 42
	// 1 true
}

func quickStart() error {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	client := srv.Client(func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(dynashard.RetryForFanOut)
	})

	orders := shard.Layout{Table: dynashardtest.TableName("orders"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(16)}
	in, err := orders.CreateTableInput()
	if err != nil {
		return err
	}
	if err := srv.CreateTable(ctx, in); err != nil {
		return err
	}

	tbl, err := shard.NewTable[Order](client, orders)
	if err != nil {
		return err
	}
	if err := tbl.Put(ctx, "2014-07-09", Order{ID: "ORD-00000001", Amount: 42}); err != nil {
		return err
	}
	o, err := tbl.Get(ctx, "2014-07-09", "ORD-00000001")
	if err != nil {
		return err
	}
	fmt.Println(o.Day, o.Amount)

	sc, err := scatter.New(client, orders)
	if err != nil {
		return err
	}
	for item, err := range sc.All(ctx, "2014-07-09") {
		if err != nil {
			return err
		}
		var o Order
		if err := item.Unmarshal(&o); err != nil {
			return err
		}
		fmt.Println(o.ID, o.Amount)
	}
	page, next, err := sc.Page(ctx, "2014-07-09", 50, "")
	if err != nil {
		return err
	}
	fmt.Println(len(page), next == "")
	return nil
}

// What calls cost, as DynamoDB reports it: a Usage in the context totals
// every request of the calls made with it. A base's first Put also reads
// (1 read unit: a consistent GetItem that finds nothing) and writes (1
// write unit) the base's layout record.
func ExampleWithUsage() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	orders := shard.Layout{Table: dynashardtest.TableName("orders"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(16)}
	in, err := orders.CreateTableInput()
	if err == nil {
		err = srv.CreateTable(ctx, in)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	tbl, err := shard.NewTable[Order](srv.Client(), orders)
	if err != nil {
		fmt.Println(err)
		return
	}

	var put dynashard.Usage
	if err := tbl.Put(dynashard.WithUsage(ctx, &put), "2014-07-09", Order{ID: "ORD-00000001", Amount: 42}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("Put: %+v in %d requests\n", put.Table(orders.Table), put.Requests())

	var get dynashard.Usage
	if _, err := tbl.Get(dynashard.WithUsage(ctx, &get), "2014-07-09", "ORD-00000001"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("Get: %+v in %d requests\n", get.Table(orders.Table), get.Requests())
	// Output:
	// Put: {Read:1 Write:2} in 3 requests
	// Get: {Read:0.5 Write:0} in 1 requests
}
