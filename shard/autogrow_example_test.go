package shard_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/shard"
)

// A Grower doubles a base's N once its writes have been throttled for
// Sustain windows in a row. Here a proxy throttles 40 % of the PutItem
// requests, and the Grower's clock is moved by hand so that 20 Puts fall
// in each one-second window. A grow announces the new N at once; the
// base's writers take it up once no process can still write under the
// history before it (the fence: here HistoryTTL 50 ms + 1 s).
func ExampleNewGrower() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer(func(o *dynashardtest.Options) {
		o.Proxy = &faultproxy.Config{ThrottleRate: 0.4, Ops: []string{"PutItem"}, Seed: 7}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	client := srv.Client(func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(ro *retry.StandardOptions) {
			ro.MaxAttempts, ro.MaxBackoff, ro.RateLimiter = 8, 2*time.Millisecond, ratelimit.None
		})
	})
	layout := shard.Layout{Table: dynashardtest.TableName("orders"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4),
		HistoryTTL: 50 * time.Millisecond}
	in, err := layout.CreateTableInput()
	if err == nil {
		err = srv.CreateTable(ctx, in)
	}
	if err != nil {
		fmt.Println(err)
		return
	}

	now, grew := time.Unix(0, 0), false
	grower, err := shard.NewGrower(func(o *shard.GrowOptions) {
		o.Sustain, o.MinAttempts, o.MaxN = 3, 10, 16
		o.Now = func() time.Time { return now }
		o.OnDecision = func(d shard.Decision) { fmt.Println(d.Kind, d.Base, d.From, "→", d.To); grew = true }
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	orders, err := shard.NewTable[ExampleOrder](client, layout, func(o *shard.Options) { o.Grower = grower })
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range 400 {
		_ = orders.Put(ctx, "2014-07-09", ExampleOrder{ID: fmt.Sprint("ORD-", i)})
		now = now.Add(50 * time.Millisecond)
		if grew { // let the fence pass, so that the next Put takes up the new N
			time.Sleep(layout.HistoryTTL + time.Second + 100*time.Millisecond)
			grew = false
		}
	}
	fmt.Println(orders.Shards(ctx, "2014-07-09"))
	fmt.Println("grows:", grower.Stats().Grows)
	// Output:
	// grow 2014-07-09 4 → 8
	// grow 2014-07-09 8 → 16
	// [4 8 16] <nil>
	// grows: 2
}
