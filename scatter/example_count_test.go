package scatter_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/dynashard/dynashard/scatter"
)

// Count counts a day's items without reading them: one Select COUNT Query
// per shard, in parallel, summed; a filter counts only the items it keeps.
func ExampleScatter_Count() {
	srv, client, layout := exampleServer()
	defer srv.Close()
	ctx := context.Background()

	sc, err := scatter.New(client, layout)
	if err != nil {
		log.Fatal(err)
	}
	n, err := sc.Count(ctx, "2014-07-09")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("orders:", n)

	big, err := expression.NewBuilder().WithFilter(expression.Name("total").GreaterThanEqual(expression.Value(50))).Build()
	if err != nil {
		log.Fatal(err)
	}
	n, err = sc.Count(ctx, "2014-07-09", scatter.WithExpression(big))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("orders of 50 or more:", n)
	// Output:
	// orders: 10
	// orders of 50 or more: 6
}
