package repo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

func Example() {
	ctx := context.Background()
	// A local server stands in for DynamoDB here; in production, pass your
	// *dynamodb.Client and an existing table.
	srv, err := ddbtest.Default()
	if err != nil {
		log.Fatal(err)
	}
	c := srv.Client()
	in, _ := ddbtest.TableInput("pk:S", "sk:S")
	table, err := srv.NewTable(ctx, in)
	if err != nil {
		log.Fatal(err)
	}
	defer c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table})

	type Order struct {
		Day    string `dynamodbav:"pk"`
		ID     string `dynamodbav:"sk"`
		Amount int    `dynamodbav:"amount"`
	}
	orders, err := repo.New[Order](c, table, "pk", "sk", func(o *repo.Options) {
		o.Strategy = shard.Hash(8) // one busy day spread over 8 partition keys
		o.CacheEntries = 1000
	})
	if err != nil {
		log.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := orders.Put(ctx, "2014-07-09", Order{ID: fmt.Sprintf("ORD-%d", i), Amount: 10 * i}); err != nil {
			log.Fatal(err)
		}
	}

	o, err := orders.Get(ctx, "2014-07-09", "ORD-3") // one GetItem on the computed key
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("got", o.ID, o.Amount)

	page, cursor, err := orders.List(ctx, "2014-07-09", 3, "") // all 8 keys queried in parallel, merged by id
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range page {
		fmt.Println("page 1:", o.ID)
	}
	page, _, err = orders.List(ctx, "2014-07-09", 3, cursor)
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range page {
		fmt.Println("page 2:", o.ID)
	}
	n, err := orders.Count(ctx, "2014-07-09")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("count:", n)
	// Output:
	// got ORD-3 30
	// page 1: ORD-1
	// page 1: ORD-2
	// page 1: ORD-3
	// page 2: ORD-4
	// page 2: ORD-5
	// count: 5
}
