package scatter_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/observe/observetest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// TestUsage: with a dynashard.Usage in the context, every read of a base
// reports the read units DynamoDB Local charged, which follow from the
// item sizes: a Query costs 0.5 units (eventually consistent) or 1
// (strongly) per started 4 KB of the items it read; both local servers
// charge nothing for a Query that reads nothing (shard 1 here). Without a
// Usage nothing asks for capacity.
func TestUsage(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		var a observetest.Asks
		c, _ := testClient(s.Endpoint, a.Option)
		table := s.Table(t, "pk:S", "sk:S")
		const n = 4
		l := layout(table, 'S', shard.Random(n))
		l.Unchecked = true // no layout record: the reads are the N Queries alone
		// Shard k holds k-1 items of a little over 3,000 bytes: the Query
		// of shard k reads ⌈(k-1)·3,0xx / 4,096⌉ units of 4 KB.
		perShard := map[int]int{}
		for k := 1; k <= n; k++ {
			for i := range k - 1 {
				pk, sk := fmt.Sprintf("day.%d", k), fmt.Sprintf("i%d", i)
				item := map[string]types.AttributeValue{"pk": sv(pk), "sk": sv(sk), "v": sv(strings.Repeat("x", 3000))}
				if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
					t.Fatal(err)
				}
				perShard[k] += len("pk") + len(pk) + len("sk") + len(sk) + len("v") + 3000
			}
		}
		// want is the read units of one Query of every shard.
		want := func(consistent bool) float64 {
			per := 0.5
			if consistent {
				per = 1
			}
			var u float64
			for k := 1; k <= n; k++ {
				u += per * math.Ceil(float64(perShard[k])/4096)
			}
			return u
		}
		sc := newScatter(t, c, l)
		a.Take()
		for _, consistent := range []bool{false, true} {
			opt := func(o *scatter.Options) { o.ConsistentRead = consistent }
			var u dynashard.Usage
			uctx := dynashard.WithUsage(ctx, &u)
			items, _, err := sc.Page(uctx, "day", 100, "", opt)
			if err != nil || len(items) != 6 {
				t.Fatalf("Page: %d items, %v; want 6", len(items), err)
			}
			if got := u.Table(table); got.Read != want(consistent) || got.Write != 0 || u.Requests() != n {
				t.Errorf("consistent=%v: Page used %+v in %d requests, want %.1f read units in %d Queries", consistent, got, u.Requests(), want(consistent), n)
			}
			for _, rc := range a.Take()["Query"] {
				if rc != types.ReturnConsumedCapacityIndexes {
					t.Errorf("a Query with a Usage asked for %q, want INDEXES", rc)
				}
			}
			u.Reset()
			for _, err := range sc.All(uctx, "day", opt) {
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := u.Total(); got.Read != want(consistent) || u.Requests() != n {
				t.Errorf("consistent=%v: All used %+v in %d requests, want %.1f", consistent, got, u.Requests(), want(consistent))
			}
			u.Reset()
			if m, err := sc.Count(uctx, "day", opt); err != nil || m != 6 {
				t.Fatalf("Count: %d, %v", m, err)
			}
			if got := u.Total(); got.Read != want(consistent) || u.Requests() != n {
				t.Errorf("consistent=%v: Count used %+v in %d requests, want %.1f", consistent, got, u.Requests(), want(consistent))
			}
			a.Take()
			// Without a Usage, nothing asks.
			if _, _, err := sc.Page(ctx, "day", 100, "", opt); err != nil {
				t.Fatal(err)
			}
			for _, rc := range a.Take()["Query"] {
				if rc != "" {
					t.Errorf("a Query without a Usage asked for %q", rc)
				}
			}
		}
	})
}
