package repo_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

func Example() {
	ctx := context.Background()
	// A local server stands in for DynamoDB here; in production, pass your
	// *dynamodb.Client and the layout of an existing table.
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()

	// One busy day spread over 8 partition keys: "2014-07-09.1" … ".8".
	layout := shard.Layout{
		Table:        dynashardtest.TableName("orders"),
		PartitionKey: "pk",
		SortKey:      "sk",
		Strategy:     shard.Hash(8),
	}
	in, err := layout.CreateTableInput()
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.CreateTable(ctx, in); err != nil {
		log.Fatal(err)
	}
	defer c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &layout.Table})

	type Order struct {
		Day    string `dynamodbav:"pk"`
		ID     string `dynamodbav:"sk"`
		Amount int    `dynamodbav:"amount"`
	}
	orders, err := repo.New[Order](c, layout, func(o *repo.Options) {
		o.CacheEntries = 1000 // opt-in: a read-through cache for Get
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
	page, _, err = orders.List(ctx, "2014-07-09", 3, cursor, func(o *repo.Options) {
		o.ConsistentRead = true // for this call only
	})
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

	if err := orders.Delete(ctx, "2014-07-09", "ORD-3"); err != nil { // one DeleteItem on the computed key
		log.Fatal(err)
	}
	_, err = orders.Get(ctx, "2014-07-09", "ORD-3", func(o *repo.Options) { o.ConsistentRead = true })
	fmt.Println("ORD-3 after Delete, not found:", errors.Is(err, repo.ErrNotFound))
	// Output:
	// got ORD-3 30
	// page 1: ORD-1
	// page 1: ORD-2
	// page 1: ORD-3
	// page 2: ORD-4
	// page 2: ORD-5
	// count: 5
	// ORD-3 after Delete, not found: true
}

// Put with optimistic locking: each Put stores the next version, and a Put
// of a value read before someone else's write fails with ErrConflict.
func ExampleRepo_Put() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	layout := shard.Layout{Table: dynashardtest.TableName("accounts"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)}
	in, err := layout.CreateTableInput()
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.CreateTable(ctx, in); err != nil {
		log.Fatal(err)
	}
	defer c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &layout.Table})

	type Account struct {
		Tenant  string `dynamodbav:"pk"`
		ID      string `dynamodbav:"sk"`
		Balance int    `dynamodbav:"balance"`
		Version int64  `dynamodbav:"version"`
	}
	accounts, err := repo.New[Account](c, layout, func(o *repo.Options) { o.Version = "version" })
	if err != nil {
		log.Fatal(err)
	}
	a, err := accounts.Create(ctx, "acme", Account{ID: "alice", Balance: 100})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created, version", a.Version)

	stale := a
	a.Balance += 50
	if a, err = accounts.Put(ctx, "acme", a); err != nil {
		log.Fatal(err)
	}
	fmt.Println("updated, version", a.Version)

	stale.Balance -= 30
	_, err = accounts.Put(ctx, "acme", stale)
	fmt.Println("stale update refused:", errors.Is(err, repo.ErrConflict))
	// Output:
	// created, version 1
	// updated, version 2
	// stale update refused: true
}
