package shard_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/shard"
)

func ExampleHash() {
	s := shard.Hash(200)
	for _, id := range []string{"ORD-00000001", "ORD-00000002", "ORD-00000003"} {
		fmt.Println(id, "→", shard.Key("2014-07-09", s.Pick(id)))
	}
	// Output:
	// ORD-00000001 → 2014-07-09.16
	// ORD-00000002 → 2014-07-09.77
	// ORD-00000003 → 2014-07-09.48
}

func ExampleCodePointProduct() {
	// The guide's formula: many ids share N's factors and land on suffix 1.
	s := shard.CodePointProduct(200)
	for _, id := range []string{"ORD-00000001", "ORD-00000002", "ORD-00000003"} {
		fmt.Println(id, "→", s.Pick(id))
	}
	// Output:
	// ORD-00000001 → 41
	// ORD-00000002 → 1
	// ORD-00000003 → 161
}

func ExampleKey() {
	fmt.Println(shard.Key("2014-07-09", 7))
	for k := range shard.Keys("2014-07-09", 3) {
		fmt.Println(k)
	}
	fmt.Println(shard.Codec{Sep: "#"}.Key("U1", 3))
	// Output:
	// 2014-07-09.7
	// 2014-07-09.1
	// 2014-07-09.2
	// 2014-07-09.3
	// U1#3
}

func ExampleParse() {
	base, suffix, err := shard.Parse("orders.2014-07-09.7") // split at the last "."
	fmt.Println(base, suffix, err)

	for _, bad := range []string{"2014-07-09.07", "2014-07-09.+7", "2014-07-09", ".7"} {
		_, _, err := shard.Parse(bad)
		fmt.Println(errors.Is(err, shard.ErrInvalidKey), err)
	}
	// Output:
	// orders.2014-07-09 7 <nil>
	// true shard: invalid key "2014-07-09.07": non-canonical suffix (leading zero)
	// true shard: invalid key "2014-07-09.+7": suffix is not decimal digits
	// true shard: invalid key "2014-07-09": missing separator
	// true shard: invalid key ".7": empty base
}

// Order is an item of a table whose partition key "pk" holds the sharded
// day and whose sort key "sk" holds the order id.
type ExampleOrder struct {
	Day    string `dynamodbav:"pk"`
	ID     string `dynamodbav:"sk"`
	Amount int    `dynamodbav:"amount"`
}

func ExampleTable() {
	ctx := context.Background()
	// A local DynamoDB-compatible server for the example; with real
	// DynamoDB this is your client.
	srv, err := dynashardtest.NewServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	client := srv.Client()
	layout := shard.Layout{Table: dynashardtest.TableName("orders"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(200)}
	in, err := layout.CreateTableInput()
	if err == nil {
		err = srv.CreateTable(ctx, in)
	}
	if err != nil {
		fmt.Println(err)
		return
	}

	orders, err := shard.NewTable[ExampleOrder](client, layout)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := orders.Put(ctx, "2014-07-09", ExampleOrder{ID: "ORD-00000001", Amount: 42}); err != nil {
		fmt.Println(err)
		return
	}
	// One GetItem: the physical key is recomputed from the id.
	o, err := orders.Get(ctx, "2014-07-09", "ORD-00000001")
	fmt.Printf("%+v %v\n", o, err)

	// Conditional writes pass through.
	_, err = orders.Update(ctx, "2014-07-09", "ORD-00000001",
		expression.Add(expression.Name("amount"), expression.Value(1)),
		func(o *shard.Options) { o.Condition = expression.Name("amount").LessThan(expression.Value(42)) })
	fmt.Println(err != nil)

	// Bad input never reaches DynamoDB.
	err = orders.Put(ctx, "2014-07-09", ExampleOrder{})
	fmt.Println(errors.Is(err, shard.ErrInvalidItem))
	// Output:
	// {Day:2014-07-09.16 ID:ORD-00000001 Amount:42} <nil>
	// true
	// true
}

func ExampleTable_Load() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	client := srv.Client()
	layout := shard.Layout{Table: dynashardtest.TableName("orders"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(20)}
	in, err := layout.CreateTableInput()
	if err == nil {
		err = srv.CreateTable(ctx, in)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	orders, err := shard.NewTable[ExampleOrder](client, layout)
	if err != nil {
		fmt.Println(err)
		return
	}

	// Input sorted by day, as an export would be; Load interleaves the
	// physical keys so consecutive requests hit different partitions.
	items := func(yield func(string, ExampleOrder) bool) {
		for _, day := range []string{"2014-07-08", "2014-07-09"} {
			for i := range 500 {
				if !yield(day, ExampleOrder{ID: fmt.Sprintf("ORD-%08d", i), Amount: i}) {
					return
				}
			}
		}
		yield("2014-07-09", ExampleOrder{}) // no id: reported, not sent
	}
	stats, err := orders.Load(ctx, items)
	fmt.Println("read", stats.Read, "written", stats.Written)
	var le *shard.LoadError[ExampleOrder]
	if errors.As(err, &le) {
		for _, f := range le.Failed {
			fmt.Println("not written:", f.Base, errors.Is(f.Err, shard.ErrInvalidItem))
		}
	}
	// Output:
	// read 1001 written 1000
	// not written: 2014-07-09 true
}

func ExampleTable_Reshard() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	layout := shard.Layout{Table: dynashardtest.TableName("orders"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(8)}
	in, err := layout.CreateTableInput()
	if err == nil {
		err = srv.CreateTable(ctx, in)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	orders, err := shard.NewTable[ExampleOrder](srv.Client(), layout)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = orders.Put(ctx, "2014-07-09", ExampleOrder{ID: "ORD-00000001", Amount: 1})

	// The day turns out hotter than planned: double its shards. Reshard
	// returns once every process writes new items under 16 (the fence:
	// 2 × HistoryTTL); the items written with 8 stay where they are.
	h, err := orders.Reshard(ctx, "2014-07-09", 16)
	fmt.Println(h, err)
	_ = orders.Put(ctx, "2014-07-09", ExampleOrder{ID: "ORD-00000002", Amount: 2})
	for _, id := range []string{"ORD-00000001", "ORD-00000002"} {
		o, err := orders.Get(ctx, "2014-07-09", id) // every key the history gives the id
		fmt.Println(o.Day, o.Amount, err)
	}

	// Rebalance moves the old items (none here: ORD-00000001 has suffix
	// 8 under both counts) and retires N = 8. This process is the
	// table's only writer and knows the new N already, so it need not
	// wait for other processes' caches (Wait: 2 × HistoryTTL).
	p, err := orders.Rebalance(ctx, "2014-07-09", func(o *shard.RebalanceOptions) { o.Wait = -1 })
	fmt.Println(p.Moved, p.Retired, err)
	h, err = orders.Shards(ctx, "2014-07-09")
	fmt.Println(h, err)
	// Output:
	// [8 16] <nil>
	// 2014-07-09.8 1 <nil>
	// 2014-07-09.13 2 <nil>
	// 0 [8 16] <nil>
	// [16] <nil>
}
