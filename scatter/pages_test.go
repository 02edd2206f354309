package scatter_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// pageLog wraps a real client and records, per physical key, the Limit of
// every Query (0 for none) and the items its answers brought: what a call
// holds of a shard is what arrived less what it yielded.
type pageLog struct {
	scatter.Client
	mu       sync.Mutex
	limits   map[string][]int32
	received map[string]int
}

func (l *pageLog) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := l.Client.Query(ctx, in, optFns...)
	pk := in.ExpressionAttributeValues[":dynashard_pk"].(*types.AttributeValueMemberS).Value
	l.mu.Lock()
	defer l.mu.Unlock()
	var limit int32
	if in.Limit != nil {
		limit = *in.Limit
	}
	l.limits[pk] = append(l.limits[pk], limit)
	if err == nil {
		l.received[pk] += len(out.Items)
	}
	return out, err
}

func (l *pageLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits, l.received = map[string][]int32{}, map[string]int{}
}

// held returns what the call holds of shard pk after yielding yielded of
// its items, and the most two pages hold: the Limits of its last two
// Queries (0 without a Limit).
func (l *pageLog) held(pk string, yielded int) (held int, twoPages int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.limits[pk]
	for i := max(0, len(ls)-2); i < len(ls); i++ {
		if ls[i] == 0 {
			return l.received[pk] - yielded, 0
		}
		twoPages += ls[i]
	}
	return l.received[pk] - yielded, twoPages
}

// TestPagesGrow: at the default PageSize, All asks each shard's first
// Query for 100 items and each later one for 4 times the one before, up to
// PageCap(N), and holds at most two pages of a shard at any item it
// yields, so at most 2 × PageCap(N) items of each (the package doc's
// memory bound). PageSize overrides the growth, a Filter reads whole
// pages, and Page asks for one item more than the page needs, as before.
func TestPagesGrow(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		table := s.Table(t, "pk:S", "sk:N")
		const n = 3
		per := map[int]int{1: 700, 2: 60, 3: 0}
		var items []map[string]types.AttributeValue
		for suffix := 1; suffix <= n; suffix++ {
			for i := range per[suffix] {
				items = append(items, map[string]types.AttributeValue{
					"pk": sv(shard.Key("day", suffix)), "sk": nv(fmt.Sprint(i*n + suffix)), "v": nv("1"),
				})
			}
		}
		putAll(t, c, table, items)
		log := &pageLog{Client: c}
		l := layout(table, 'N', shard.Hash(n))
		l.Unchecked = true
		sc := newScatter(t, log, l)

		grown := func(total int) []int32 { // the Limits of a shard of total items
			var out []int32
			for got := 0; ; {
				limit := scatter.GrowPage(len(out), n)
				out = append(out, limit)
				if got += int(limit); got > total {
					return out
				}
			}
		}
		for _, tc := range []struct {
			name string
			opt  func(*scatter.Options)
			want map[int][]int32 // Limits by suffix
		}{
			{"defaults", nil, map[int][]int32{1: grown(700), 2: {100}, 3: {100}}},
			{"PageSize", func(o *scatter.Options) { o.PageSize = 300 }, map[int][]int32{1: {300, 300, 300}, 2: {300}, 3: {300}}},
			{"Filter", func(o *scatter.Options) {
				o.Filter, o.Names, o.Values = "#v = :one", map[string]string{"#v": "v"}, map[string]types.AttributeValue{":one": nv("1")}
			}, map[int][]int32{1: {0}, 2: {0}, 3: {0}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				log.reset()
				yielded := map[int]int{}
				bound := 2 * scatter.PageCap(n)
				count := 0
				for it, err := range sc.All(context.Background(), "day", tc.opt) {
					if err != nil {
						t.Fatal(err)
					}
					count++
					yielded[it.Suffix]++
					for suffix := 1; suffix <= n; suffix++ {
						h, two := log.held(shard.Key("day", suffix), yielded[suffix])
						if h > bound || two > 0 && h > int(two) {
							t.Fatalf("after %d items, shard %d holds %d items, want at most two pages (%d) and %d", count, suffix, h, two, bound)
						}
					}
				}
				if count != len(items) {
					t.Fatalf("got %d items, want %d", count, len(items))
				}
				got := map[int][]int32{}
				for suffix := 1; suffix <= n; suffix++ {
					got[suffix] = log.limits[shard.Key("day", suffix)]
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Limits by suffix (-want +got):\n%s", diff)
				}
			})
		}
		t.Run("Page", func(t *testing.T) {
			log.reset()
			if _, _, err := sc.Page(context.Background(), "day", 10, ""); err != nil {
				t.Fatal(err)
			}
			for suffix := 1; suffix <= n; suffix++ {
				if got := log.limits[shard.Key("day", suffix)]; len(got) < 1 || got[0] != 11 {
					t.Errorf("shard %d: Limits %v, want the first 11", suffix, got)
				}
			}
		})
	})
}
