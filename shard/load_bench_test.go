package shard_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/batch"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// BenchmarkLoadSorted loads input sorted by physical partition key (what an
// export of a table produces) through a fault proxy that gives every key
// its own write capacity, as DynamoDB gives each partition its own:
//
//   - sorted: the batch engine writes it in input order, so each request's
//     25 items hit one key (the guide's "U1#1…U1#100, U2#1…");
//   - loader: Table.Load interleaves the keys round-robin.
//
// The model: per-key capacity PerKeyWCU (scaled down from DynamoDB's 1,000
// WCU per partition so the benchmark runs in seconds; what matters is the
// ratio of a key's rate to the load's), 1 s of burst, items under 1 KB
// (1 WCU each), MaxConcurrency 8, against the first selected local server.
// It reports items/s; compare the two. loader-unthrottled is the loader
// again with no capacity model at all.
func BenchmarkLoadSorted(b *testing.B) {
	const (
		keys      = 30
		perKey    = 100
		PerKeyWCU = 50
	)
	srv, err := ddbtest.Default()
	if err != nil {
		b.Fatal(err)
	}
	in, _ := ddbtest.TableInput("pk:S", "sk:S")
	name, err := srv.NewTable(context.Background(), in)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Client().DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})

	// keys bases with one shard each, so "sorted by base" is "sorted by
	// physical key" and the comparison isolates the interleaving.
	st := shard.Hash(1)
	var input []pair
	for k := range keys {
		for i := range perKey {
			input = append(input, pair{fmt.Sprintf("U%d", k+1), Order{ID: fmt.Sprintf("%05d", i), Amount: i, Note: strings.Repeat("x", 200)}})
		}
	}
	cfg := faultproxy.Config{WCU: PerKeyWCU, Burst: time.Second}

	run := func(b *testing.B, load func(ctx context.Context, c *dynamodb.Client) error) {
		var total time.Duration
		var unprocessed int
		for b.Loop() {
			b.StopTimer()
			p, err := faultproxy.New(srv.Endpoint, cfg) // fresh buckets each round
			if err != nil {
				b.Fatal(err)
			}
			c := srv.Client(func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL()) })
			b.StartTimer()
			start := time.Now()
			if err := load(context.Background(), c); err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
			b.StopTimer()
			unprocessed += p.Stats().Total.Unprocessed
			p.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(len(input)*b.N)/total.Seconds(), "items/s")
		b.ReportMetric(float64(unprocessed)/float64(b.N), "unprocessed/op")
	}

	b.Run("sorted", func(b *testing.B) {
		tbl := newBenchTable(b, srv.Client(), name, st)
		writes := make([]batch.Write, 0, len(input))
		for _, p := range input {
			pk, err := tbl.Key(p.base, p.item.ID)
			if err != nil {
				b.Fatal(err)
			}
			o := p.item
			o.Day = pk
			av, err := attributevalue.MarshalMap(o)
			if err != nil {
				b.Fatal(err)
			}
			writes = append(writes, batch.Write{Table: name, Put: av})
		}
		run(b, func(ctx context.Context, c *dynamodb.Client) error {
			_, err := batch.WriteSeq(ctx, c, slices.Values(writes), func(o *batch.Options) {
				o.KeyAttributes = map[string][]string{name: {"pk", "sk"}}
				o.StallTimeout = time.Hour // measure throughput, don't give up
			})
			return err
		})
	})
	b.Run("loader", func(b *testing.B) {
		run(b, func(ctx context.Context, c *dynamodb.Client) error {
			tbl := newBenchTable(b, c, name, st)
			_, err := tbl.Load(ctx, seq2(input))
			return err
		})
	})
	// The same load through a proxy that throttles nothing: what the
	// loader costs when capacity is not the limit (per-key pacing must
	// cost nothing then).
	b.Run("loader-unthrottled", func(b *testing.B) {
		cfg = faultproxy.Config{}
		run(b, func(ctx context.Context, c *dynamodb.Client) error {
			tbl := newBenchTable(b, c, name, st)
			_, err := tbl.Load(ctx, seq2(input))
			return err
		})
	})
}

func newBenchTable(b *testing.B, c shard.Client, name string, st shard.Strategy) *shard.Table[Order] {
	b.Helper()
	tbl, err := shard.NewTable[Order](c, shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: st})
	if err != nil {
		b.Fatal(err)
	}
	return tbl
}
