package scatter_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// hookClient is a scatter.Client whose Query calls before, then the
// server, then after, each with the shard the request reads.
type hookClient struct {
	*dynamodb.Client
	l             shard.Layout
	base          string
	before, after func(ctx context.Context, suffix int)
}

func (c *hookClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	suffix := 0
	for _, v := range in.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			if base, n, err := c.l.Codec.Parse(s.Value); err == nil && base == c.base {
				suffix = n
			}
		}
	}
	if c.before != nil {
		c.before(ctx, suffix)
	}
	out, err := c.Client.Query(ctx, in, optFns...)
	if c.after != nil {
		c.after(ctx, suffix)
	}
	return out, err
}

// fastLayout is layout with a HistoryTTL of 100 ms, so that a Reshard
// waits a fence of 1.1 s.
func fastLayout(strategy shard.Strategy) shard.Layout {
	l := layout("", 'S', strategy)
	l.HistoryTTL = 100 * time.Millisecond
	return l
}

// loadDay writes ids id-000 … id-(n-1) (v = i) under base "day" at the
// keys strategy gives them: the first with a Put, which records the base,
// the others with BatchWriteItem, as a Put at one count writes them.
func loadDay(t *testing.T, s *ddbtest.Server, tbl *shard.Table[row], l shard.Layout, strategy shard.Strategy, n int) {
	t.Helper()
	putRows(t, tbl, "day", 0, 1, 0)
	var items []map[string]types.AttributeValue
	for i := 1; i < n; i++ {
		id := fmt.Sprintf("id-%03d", i)
		items = append(items, map[string]types.AttributeValue{
			"pk": sv(l.Codec.Key("day", strategy.Pick(id))), "sk": sv(id), "id": sv(id), "v": nv(fmt.Sprint(i)),
		})
	}
	putAll(t, s.Client(), l.Table, items)
}

func noWait(o *shard.RebalanceOptions) { o.Wait = -1 }

// idCounts counts the ids of items.
func idCounts(items []scatter.Item) map[string]int {
	n := map[string]int{}
	for _, it := range items {
		n[it.Attrs["id"].(*typesS).Value]++
	}
	return n
}

// twice lists the ids counted more than once, sorted.
func twice(n map[string]int) []string {
	var d []string
	for id, k := range n {
		if k > 1 {
			d = append(d, id)
		}
	}
	slices.Sort(d)
	return d
}

// TestRebalanceUnorderedOnce: an unordered read over a history of two
// counts returns each item once while a Rebalance moves items under it
// (issue 30, class 4). 600 items at Hash(2), Reshard to 6; the reader
// reads one shard at a time (MaxConcurrency 1) in pages of 5, and its
// first Query of suffixes 3..6 runs the whole Rebalance first: items it
// returned from suffixes 1 and 2 before the move are then in 3..6 too.
// An item that stayed where it was, or moved to a suffix read only after
// the move, is returned; one moved between suffixes 1 and 2 behind the
// reader's position may be missed (reads are not snapshots). Reads after
// the Rebalance return every item once.
func TestRebalanceUnorderedOnce(t *testing.T) {
	calls := []struct {
		name string
		read func(ctx context.Context, sc *scatter.Scatter, o func(*scatter.Options)) ([]scatter.Item, error)
	}{
		{"All", func(ctx context.Context, sc *scatter.Scatter, o func(*scatter.Options)) ([]scatter.Item, error) {
			var out []scatter.Item
			for it, err := range sc.All(ctx, "day", o) {
				if err != nil {
					return nil, err
				}
				out = append(out, it)
			}
			return out, nil
		}},
		{"Page", func(ctx context.Context, sc *scatter.Scatter, o func(*scatter.Options)) ([]scatter.Item, error) {
			items, _, err := sc.Page(ctx, "day", 2000, "", o)
			return items, err
		}},
	}
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		for _, call := range calls {
			t.Run(call.name, func(t *testing.T) {
				ctx := context.Background()
				const n = 600
				l := fastLayout(shard.Hash(2))
				admin := reshardTable(t, s, s.Client(), &l)
				loadDay(t, s, admin, l, shard.Hash(2), n)
				if h, err := admin.Reshard(ctx, "day", 6); err != nil || !slices.Equal(h, []int{2, 6}) {
					t.Fatalf("Reshard 6: %v, %v", h, err)
				}
				var once sync.Once
				var moved shard.RebalanceProgress
				var rerr error
				c, _ := testClient(s.Endpoint, fastRetries(3))
				hc := &hookClient{Client: c, l: l, base: "day", before: func(ctx context.Context, suffix int) {
					if suffix >= 3 {
						once.Do(func() { moved, rerr = admin.Rebalance(context.Background(), "day", noWait) })
					}
				}}
				sc := newScatter(t, hc, l)
				unordered := func(o *scatter.Options) { o.Unordered, o.PageSize, o.MaxConcurrency = true, 5, 1 }
				got, err := call.read(ctx, sc, unordered)
				if err != nil {
					t.Fatal(err)
				}
				if rerr != nil || moved.Moved == 0 || moved.Retired == nil {
					t.Fatalf("Rebalance under the read: %+v, %v", moved, rerr)
				}
				counts := idCounts(got)
				if d := twice(counts); len(d) > 0 {
					t.Errorf("unordered %s during a Rebalance: %d ids twice: %v", call.name, len(d), d)
				}
				early := 0 // items returned at their old key, before the move
				for _, it := range got {
					id := it.Attrs["id"].(*typesS).Value
					if it.Suffix <= 2 && shard.Hash(6).Pick(id) > 2 {
						early++
					}
				}
				if early == 0 {
					t.Error("no item returned from its old key: the read did not overlap the moves")
				}
				for i := range n {
					id := fmt.Sprintf("id-%03d", i)
					from, to := shard.Hash(2).Pick(id), shard.Hash(6).Pick(id)
					if (from == to || to > 2) && counts[id] == 0 {
						t.Errorf("unordered %s: %s (suffix %d to %d) missing", call.name, id, from, to)
					}
					delete(counts, id)
				}
				if len(counts) > 0 {
					t.Errorf("unordered %s: ids never written: %v", call.name, counts)
				}
				t.Logf("%s: %d items during the Rebalance (%d moved, %d returned before their move)", call.name, len(got), moved.Moved, early)
				// After it: every item once, in every mode.
				for _, unordered := range []bool{false, true} {
					all := collect(t, sc.All(ctx, "day", func(o *scatter.Options) { o.Unordered = unordered }))
					if c := idCounts(all); len(c) != n || len(twice(c)) > 0 {
						t.Errorf("All (Unordered %v) after the Rebalance: %d items, %d ids, twice %v", unordered, len(all), len(c), twice(c))
					}
				}
			})
		}
	})
}

// TestRebalanceUnorderedRandom: under Random, a Rebalance that shrinks a
// base moves items from suffixes above the newest count to one at or
// below it, unchanged but for the partition key: an unordered read that
// met such an item before the move does not return it again (issue 30,
// class 4). 300 items at Random(6), Reshard to 2; the reader's Queries of
// suffixes 1 and 2 wait until the first pages of 3..6 are in and the
// Rebalance is done, so every item is returned, each once.
func TestRebalanceUnorderedRandom(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		const n = 300
		l := fastLayout(shard.Random(6))
		admin := reshardTable(t, s, s.Client(), &l)
		loadDay(t, s, admin, l, shard.Random(6), n)
		if h, err := admin.Reshard(ctx, "day", 2); err != nil || !slices.Equal(h, []int{6, 2}) {
			t.Fatalf("Reshard 2: %v, %v", h, err)
		}
		var mu sync.Mutex
		answered := map[int]bool{}
		done := make(chan struct{})
		var moved shard.RebalanceProgress
		var rerr error
		c, _ := testClient(s.Endpoint, fastRetries(3))
		hc := &hookClient{Client: c, l: l, base: "day",
			before: func(ctx context.Context, suffix int) {
				if suffix <= 2 {
					select {
					case <-done:
					case <-ctx.Done():
					}
				}
			},
			after: func(ctx context.Context, suffix int) {
				if suffix <= 2 {
					return
				}
				mu.Lock()
				first := !answered[suffix]
				answered[suffix] = true
				last := first && len(answered) == 4
				mu.Unlock()
				if last {
					moved, rerr = admin.Rebalance(context.Background(), "day", noWait)
					close(done)
				}
			}}
		sc := newScatter(t, hc, l)
		got := collect(t, sc.All(ctx, "day", func(o *scatter.Options) { o.Unordered, o.PageSize, o.MaxConcurrency = true, 5, 6 }))
		if rerr != nil || moved.Moved == 0 {
			t.Fatalf("Rebalance under the read: %+v, %v", moved, rerr)
		}
		counts := idCounts(got)
		if d := twice(counts); len(d) > 0 {
			t.Errorf("unordered All during a Rebalance: %d ids twice: %v", len(d), d)
		}
		if len(counts) != n {
			t.Errorf("unordered All during a Rebalance: %d ids, want %d", len(counts), n)
		}
	})
}

// TestLookupOnce: while the history holds several counts, Lookup returns
// an item once (issue 30, class 4). A table written before the one-copy
// protocol may hold an id at an older count's key and at the newest's:
// under Hash, the copy at the newest count's key is returned. Under
// Random, an item at a suffix above the newest count and an equal one at
// or below it (a move's two ends) are one; a different item with the
// same sort key is another, for Lookup and for Count.
func TestLookupOnce(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		t.Run("Hash", func(t *testing.T) {
			l := fastLayout(shard.Hash(2))
			tbl := reshardTable(t, s, s.Client(), &l)
			putRows(t, tbl, "day", 0, 1, 0)
			if _, err := tbl.Reshard(ctx, "day", 6); err != nil {
				t.Fatal(err)
			}
			id := ""
			for i := 0; id == ""; i++ {
				if k := fmt.Sprintf("x-%d", i); shard.Hash(2).Pick(k) != shard.Hash(6).Pick(k) {
					id = k
				}
			}
			old, home := shard.Hash(2).Pick(id), shard.Hash(6).Pick(id)
			putAll(t, s.Client(), l.Table, []map[string]types.AttributeValue{
				{"pk": sv(shard.Key("day", old)), "sk": sv(id), "id": sv(id), "v": nv("1")},
				{"pk": sv(shard.Key("day", home)), "sk": sv(id), "id": sv(id), "v": nv("2")},
			})
			items, err := newScatter(t, s.Client(), l).Lookup(ctx, "day", sv(id))
			if err != nil || len(items) != 1 || items[0].Suffix != home {
				t.Fatalf("Lookup %s: %v, %v, want the item at suffix %d alone", id, items, err, home)
			}
		})
		t.Run("Random", func(t *testing.T) {
			l := fastLayout(shard.Random(6))
			tbl := reshardTable(t, s, s.Client(), &l)
			putRows(t, tbl, "day", 0, 1, 0)
			if _, err := tbl.Reshard(ctx, "day", 2); err != nil {
				t.Fatal(err)
			}
			item := func(suffix int, sk, v string) map[string]types.AttributeValue {
				return map[string]types.AttributeValue{"pk": sv(shard.Key("day", suffix)), "sk": sv(sk), "v": nv(v), "dynashard:w": sv(fmt.Sprint(suffix))}
			}
			putAll(t, s.Client(), l.Table, []map[string]types.AttributeValue{
				item(5, "a", "1"), item(1, "a", "1"), // one item, met at both ends of its move
				item(4, "b", "1"), item(2, "b", "2"), // two items
			})
			sc := newScatter(t, s.Client(), l)
			for _, tt := range []struct {
				sk   string
				want []int
			}{{"a", []int{1}}, {"b", []int{2, 4}}} {
				items, err := sc.Lookup(ctx, "day", sv(tt.sk))
				var got []int
				for _, it := range items {
					got = append(got, it.Suffix)
				}
				if err != nil || !slices.Equal(got, tt.want) {
					t.Errorf("Lookup %s: suffixes %v, %v, want %v", tt.sk, got, err, tt.want)
				}
			}
			// Count tells the two items with sort key b apart, and the two
			// sightings of a's item not: 4 with the first row.
			if n, err := sc.Count(ctx, "day"); err != nil || n != 4 {
				t.Errorf("Count: %d, %v, want 4", n, err)
			}
		})
	})
}

// hidden lists the attributes of items named "dynashard:…", which the
// library keeps for itself.
func hidden(items []scatter.Item) []string {
	var out []string
	for _, it := range items {
		for name := range it.Attrs {
			if strings.HasPrefix(name, "dynashard:") {
				out = append(out, fmt.Sprintf("%d/%s", it.Suffix, name))
			}
		}
	}
	return out
}

// TestRebalanceCursorRewritten: a cursor resumes after its own item across
// a Rebalance also when the item was written while the history had two
// counts (a write that sets the hidden dynashard:w, which the move drops)
// or written again after the cursor was made (issue 30, class 9): the
// cursor names its item by its key, the id. With Hash, 3 in 4 items move
// from N=4 to N=16; every position of a 40-item day is tried, ascending
// and descending. No item that All, Page or Lookup returns carries a
// hidden attribute.
func TestRebalanceCursorRewritten(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		for _, when := range []string{"before", "after"} {
			t.Run("rewritten "+when+" the cursor", func(t *testing.T) {
				ctx := context.Background()
				l := fastLayout(shard.Hash(4))
				tbl := reshardTable(t, s, s.Client(), &l)
				putRows(t, tbl, "day", 0, 40, 0)
				if when == "before" {
					if _, err := tbl.Reshard(ctx, "day", 16); err != nil {
						t.Fatal(err)
					}
					putRows(t, tbl, "day", 0, 40, 1000)
				}
				sc := newScatter(t, s.Client(), l)
				type walk struct {
					desc    bool
					cursors []scatter.Cursor
					lasts   []string
				}
				walks := []*walk{{desc: false}, {desc: true}}
				var seen []string // hidden attributes returned
				for _, w := range walks {
					opt := func(o *scatter.Options) { o.Descending = w.desc }
					for cur := scatter.Cursor(""); ; {
						items, next, err := sc.Page(ctx, "day", 1, cur, opt)
						if err != nil || len(items) != 1 {
							t.Fatalf("page after %q: %d items, %v", cur, len(items), err)
						}
						seen = append(seen, hidden(items)...)
						if next == "" {
							break
						}
						w.cursors, w.lasts = append(w.cursors, next), append(w.lasts, items[0].Attrs["id"].(*typesS).Value)
						cur = next
					}
				}
				if len(seen) > 0 {
					t.Errorf("Page returned %d hidden attributes: %v", len(seen), seen)
				}
				if h := hidden(collect(t, sc.All(ctx, "day"))); len(h) > 0 {
					t.Errorf("All returned %d hidden attributes", len(h))
				}
				if when == "after" {
					if _, err := tbl.Reshard(ctx, "day", 16); err != nil {
						t.Fatal(err)
					}
					putRows(t, tbl, "day", 0, 40, 1000)
				}
				if h := hidden(collect(t, sc.All(ctx, "day", func(o *scatter.Options) { o.Unordered = true }))); len(h) > 0 {
					t.Errorf("All (Unordered) returned %d hidden attributes", len(h))
				}
				if items, err := sc.Lookup(ctx, "day", sv("id-007")); err != nil || len(items) != 1 || len(hidden(items)) > 0 {
					t.Errorf("Lookup: %v, %v, want one item without hidden attributes", items, err)
				}
				if p, err := tbl.Rebalance(ctx, "day", noWait); err != nil || p.Moved == 0 {
					t.Fatalf("Rebalance: %+v, %v", p, err)
				}
				for _, w := range walks {
					opt := func(o *scatter.Options) { o.Descending = w.desc }
					for i, cur := range w.cursors {
						var want, got []string
						for j := range 40 {
							id := fmt.Sprintf("id-%03d", j)
							if id > w.lasts[i] != w.desc && id != w.lasts[i] {
								want = append(want, fmt.Sprintf("%s=%d", id, 1000+j))
							}
						}
						if w.desc {
							slices.Reverse(want)
						}
						for cur != "" {
							items, next, err := sc.Page(ctx, "day", 100, cur, opt)
							if err != nil {
								t.Fatal(err)
							}
							got, cur = append(got, values(t, items)...), next
						}
						if !slices.Equal(got, want) {
							t.Errorf("descending %v, resumed after %s: (-got +want)\n%s", w.desc, w.lasts[i], cmp.Diff(got, want))
						}
					}
				}
			})
		}
	})
}

// TestRebalanceCursorRandom: under Random, a cursor names its item by its
// sort key and a digest of its attributes but the partition key and the
// hidden ones, so that when a shrinking Rebalance moves the item to a
// shard the merge reads after it (a lower suffix, descending), the next
// Page does not return it again, also when it was written with
// ExactlyOnce, which sets dynashard:w (issue 30, class 9). The cursors
// resume once every suffix is swept, before the Rebalance retires
// suffixes 3 and 4 (a cursor in a retired suffix is CursorOutOfRange).
func TestRebalanceCursorRandom(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := fastLayout(shard.Random(4))
		tbl := reshardTable(t, s, s.Client(), &l)
		for i := range 40 {
			id := fmt.Sprintf("id-%03d", i)
			if err := tbl.Put(ctx, "day", row{SK: id, ID: id, V: i}, func(o *shard.Options) { o.ExactlyOnce = true }); err != nil {
				t.Fatal(err)
			}
		}
		sc := newScatter(t, s.Client(), l)
		desc := func(o *scatter.Options) { o.Descending = true }
		var cursors []scatter.Cursor
		var lasts, seen []string
		for cur := scatter.Cursor(""); ; {
			items, next, err := sc.Page(ctx, "day", 1, cur, desc)
			if err != nil || len(items) != 1 {
				t.Fatalf("page after %q: %d items, %v", cur, len(items), err)
			}
			seen = append(seen, hidden(items)...)
			if next == "" {
				break
			}
			cursors, lasts = append(cursors, next), append(lasts, items[0].Attrs["id"].(*typesS).Value)
			cur = next
		}
		if len(seen) > 0 {
			t.Errorf("Page returned %d hidden attributes: %v", len(seen), seen)
		}
		if _, err := tbl.Reshard(ctx, "day", 2); err != nil {
			t.Fatal(err)
		}
		resumed := false
		check := func(p shard.RebalanceProgress) {
			if p.Suffix < p.Suffixes {
				return
			}
			resumed = true
			for i, cur := range cursors {
				var want, got []string
				for j := 39; j >= 0; j-- {
					if id := fmt.Sprintf("id-%03d", j); id < lasts[i] {
						want = append(want, fmt.Sprintf("%s=%d", id, j))
					}
				}
				for cur != "" {
					items, next, err := sc.Page(ctx, "day", 100, cur, desc)
					if err != nil {
						t.Fatal(err)
					}
					got, cur = append(got, values(t, items)...), next
				}
				if !slices.Equal(got, want) {
					t.Errorf("resumed after %s: (-got +want)\n%s", lasts[i], cmp.Diff(got, want))
				}
			}
		}
		p, err := tbl.Rebalance(ctx, "day", noWait, func(o *shard.RebalanceOptions) { o.OnProgress = check })
		if err != nil || p.Moved == 0 || !resumed {
			t.Fatalf("Rebalance: %+v, %v; cursors resumed: %v", p, err, resumed)
		}
	})
}
