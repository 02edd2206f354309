package repo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

// All iterates over a whole day in id order, every shard queried in
// parallel; breaking out of the loop stops the reads.
func ExampleRepo_All() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	layout := shard.Layout{Table: dynashardtest.TableName("events"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(8)}
	in, err := layout.CreateTableInput()
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.CreateTable(ctx, in); err != nil {
		log.Fatal(err)
	}
	defer c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &layout.Table})

	type Event struct {
		Day  string `dynamodbav:"pk"`
		ID   string `dynamodbav:"sk"`
		Kind string `dynamodbav:"kind"`
	}
	events, err := repo.New[Event](c, layout)
	if err != nil {
		log.Fatal(err)
	}
	for i, kind := range []string{"login", "view", "view", "buy", "logout"} {
		if _, err := events.Put(ctx, "2014-07-09", Event{ID: fmt.Sprintf("ev-%d", i+1), Kind: kind}); err != nil {
			log.Fatal(err)
		}
	}
	for e, err := range events.All(ctx, "2014-07-09") {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.ID, e.Kind)
		if e.Kind == "buy" {
			break // the rest is not read
		}
	}
	// Output:
	// ev-1 login
	// ev-2 view
	// ev-3 view
	// ev-4 buy
}
