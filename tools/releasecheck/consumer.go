package main

// quickStart is the README's quick start as a user's test would run it,
// against a local server from dynashardtest: it must build and pass with
// the modules fetched from the proxy.
const quickStart = `package consumer

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

type Order struct {
	Day    string ` + "`dynamodbav:\"pk\"`" + `
	ID     string ` + "`dynamodbav:\"sk\"`" + `
	Amount int    ` + "`dynamodbav:\"amount\"`" + `
}

func TestQuickStart(t *testing.T) {
	ctx := context.Background()
	srv := dynashardtest.Start(t)
	var client *dynamodb.Client = srv.Client()

	orders := shard.Layout{Table: "orders", PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(16)}
	in, err := orders.CreateTableInput()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateTable(ctx, in); err != nil {
		t.Fatal(err)
	}
	tbl, err := shard.NewTable[Order](client, orders)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Put(ctx, "2014-07-09", Order{ID: "ORD-00000001", Amount: 42}); err != nil {
		t.Fatal(err)
	}
	o, err := tbl.Get(ctx, "2014-07-09", "ORD-00000001")
	if err != nil {
		t.Fatal(err)
	}
	if o.Day != "2014-07-09.8" || o.Amount != 42 {
		t.Fatalf("Get = %+v, want day 2014-07-09.8, amount 42 (the README's output)", o)
	}
	sc, err := scatter.New(client, orders)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for item, err := range sc.All(ctx, "2014-07-09") {
		if err != nil {
			t.Fatal(err)
		}
		var o Order
		if err := item.Unmarshal(&o); err != nil {
			t.Fatal(err)
		}
		n++
	}
	page, next, err := sc.Page(ctx, "2014-07-09", 50, "")
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(page) != 1 || next != "" {
		t.Fatalf("All read %d items, Page %d with next %q; want 1, 1, \"\"", n, len(page), next)
	}
}
`

// s3Use makes the consumer import s3blob as chunk's object store, so that
// the build needs both modules at the released version.
const s3Use = `package consumer

import (
	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/s3blob"
)

var _ chunk.ObjectStore = (*s3blob.Bucket)(nil)
`
