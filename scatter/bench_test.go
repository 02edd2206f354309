package scatter_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/shard"
)

// BenchmarkDay reads a sharded day (100 items per shard) through the fault
// proxy with 5 ms (and 50 ms) added to every Query: the scatter merge, the guide's
// sequential loop over suffixes (then a sort), and one Query of one shard,
// the round trip from which the lower bound ⌈N/concurrency⌉ × pages ×
// round trip follows. The server is DYNASHARD_SERVER's first (default
// DynamoDB Local).
func BenchmarkDay(b *testing.B) {
	const perShard, latency = 100, 5 * time.Millisecond
	srv, err := ddbtest.Default()
	if err != nil {
		b.Fatal(err)
	}
	direct, _ := testClient(srv.Endpoint)
	table := srv.Table(b, "pk:S", "sk:S")
	var items []map[string]types.AttributeValue
	for suffix := 1; suffix <= 200; suffix++ {
		for i := range perShard {
			items = append(items, map[string]types.AttributeValue{
				"pk": sv(shard.Key("day", suffix)), "sk": sv(fmt.Sprintf("2014-07-09T%02d:%02d:%02d.%03d", i%24, i%60, suffix%60, suffix)),
				"v": nv(fmt.Sprint(i)),
			})
		}
	}
	putAll(b, direct, table, items)
	p, err := faultproxy.New(srv.Endpoint, faultproxy.Config{Latency: latency, Ops: []string{"Query"}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	c, _ := testClient(p.URL())
	ctx := context.Background()

	for _, lat := range []time.Duration{latency, 10 * latency} {
		if err := p.Set(faultproxy.Config{Latency: lat, Ops: []string{"Query"}}); err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{32, 200} {
			b.Run(fmt.Sprintf("latency=%v/N=%d/scatter", lat, n), func(b *testing.B) {
				// Unchecked: the data was written without a layout record, and
				// a checked read of such a base pays one GetItem per call.
				l := layout(table, 'S', shard.Hash(n))
				l.Unchecked = true
				sc := newScatter(b, c, l)
				for b.Loop() {
					got := 0
					for _, err := range sc.All(ctx, "day") {
						if err != nil {
							b.Fatal(err)
						}
						got++
					}
					if got != n*perShard {
						b.Fatalf("got %d items, want %d", got, n*perShard)
					}
				}
				b.ReportMetric(float64(sc.Stats().Queries)/float64(b.N), "queries/op")
			})
			b.Run(fmt.Sprintf("latency=%v/N=%d/sequential", lat, n), func(b *testing.B) {
				for b.Loop() {
					var all []map[string]types.AttributeValue
					for key := range shard.Keys("day", n) {
						in := &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"),
							ExpressionAttributeValues: map[string]types.AttributeValue{":p": sv(key)}}
						for pg := dynamodb.NewQueryPaginator(c, in); pg.HasMorePages(); {
							out, err := pg.NextPage(ctx)
							if err != nil {
								b.Fatal(err)
							}
							all = append(all, out.Items...)
						}
					}
					slices.SortStableFunc(all, func(x, y map[string]types.AttributeValue) int {
						c, _ := keyorder.Compare(x["sk"], y["sk"])
						return c
					})
					if len(all) != n*perShard {
						b.Fatalf("got %d items, want %d", len(all), n*perShard)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("latency=%v/one-query", lat), func(b *testing.B) {
			in := &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": sv(shard.Key("day", 1))}}
			for b.Loop() {
				out, err := c.Query(ctx, in)
				if err != nil || len(out.Items) != perShard || out.LastEvaluatedKey != nil {
					b.Fatalf("got %d items in one page, %v; want %d", len(out.Items), err, perShard)
				}
			}
		})
	}
}
