package scatter_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// reshardTable creates a table for layout l (pk:S, sk:S) and returns a
// Table over it through c.
func reshardTable(t *testing.T, s *ddbtest.Server, c shard.Client, l *shard.Layout) *shard.Table[row] {
	t.Helper()
	l.Table = ddbtest.TableName()
	in, err := l.CreateTableInput()
	if err != nil {
		t.Fatal(err)
	}
	s.CreateTable(t, in)
	tbl, err := shard.NewTable[row](c, *l)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func putRows(t *testing.T, tbl *shard.Table[row], base string, from, to, v int) {
	t.Helper()
	for i := from; i < to; i++ {
		id := fmt.Sprintf("id-%03d", i)
		if err := tbl.Put(context.Background(), base, row{SK: id, ID: id, V: v + i}); err != nil {
			t.Fatal(err)
		}
	}
}

// values renders items as "id=v", the form the expectations use.
func values(t *testing.T, items []scatter.Item) []string {
	t.Helper()
	out := make([]string, len(items))
	for i, it := range items {
		var r row
		if err := it.Unmarshal(&r); err != nil {
			t.Fatal(err)
		}
		out[i] = fmt.Sprintf("%s=%d", r.ID, r.V)
	}
	return out
}

// TestReshardReads: items written under every count of a base's history
// ([4], then [4, 8], then [4, 8, 16]) are returned exactly once, in order,
// by All and by Page at every page size, counted once by Count, and found
// by Get with the requests the probe order predicts; ids rewritten after a
// Reshard leave an older copy behind, and reads return the newest one. A
// Scatter whose layout has another N reads the same.
func TestReshardReads(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, sent := countingClient(s.Endpoint)
		l := layout("", 'S', shard.Hash(4))
		tbl := reshardTable(t, s, c, &l)
		written := map[string]int{} // id -> the N it was first written under: a rewrite is in place
		want := map[string]string{}
		put := func(from, to, v, n int) {
			putRows(t, tbl, "day", from, to, v)
			for i := from; i < to; i++ {
				id := fmt.Sprintf("id-%03d", i)
				if _, ok := written[id]; !ok {
					written[id] = n
				}
				want[id] = fmt.Sprintf("%s=%d", id, v+i)
			}
		}
		put(0, 30, 0, 4)
		if h, err := tbl.Reshard(ctx, "day", 8); err != nil || !slices.Equal(h, []int{4, 8}) {
			t.Fatalf("Reshard 8: %v, %v", h, err)
		}
		put(30, 60, 0, 8)
		if h, err := tbl.Reshard(ctx, "day", 16); err != nil || !slices.Equal(h, []int{4, 8, 16}) {
			t.Fatalf("Reshard 16: %v, %v", h, err)
		}
		put(60, 90, 0, 16)
		for i := 0; i < 60; i += 3 { // rewritten under 16: older copies stay
			put(i, i+1, 1000, 16)
		}
		var wantList []string
		for _, id := range slices.Sorted(mapsKeys(want)) {
			wantList = append(wantList, want[id])
		}
		for _, n := range []int{4, 2, 32} {
			rl := l
			rl.Strategy = shard.Hash(n)
			sc := newScatter(t, c, rl)
			if got := values(t, collect(t, sc.All(ctx, "day"))); !slices.Equal(got, wantList) {
				t.Errorf("layout N=%d: All: (-got +want)\n%s", n, cmp.Diff(got, wantList))
			}
			desc := slices.Clone(wantList)
			slices.Reverse(desc)
			if got := values(t, collect(t, sc.All(ctx, "day", func(o *scatter.Options) { o.Descending = true }))); !slices.Equal(got, desc) {
				t.Errorf("layout N=%d: All descending: (-got +want)\n%s", n, cmp.Diff(got, desc))
			}
			for _, limit := range []int{1, 2, 7, 100} {
				q := read{l: rl, base: "day"}
				if got := values(t, pages(t, sc, q, limit)); !slices.Equal(got, wantList) {
					t.Errorf("layout N=%d: Page(%d): (-got +want)\n%s", n, limit, cmp.Diff(got, wantList))
				}
			}
		}
		// Count: each item once, copies included.
		for _, unordered := range []bool{false, true} {
			n, err := newScatter(t, c, l).Count(ctx, "day", func(o *scatter.Options) { o.Unordered = unordered })
			if err != nil || n != int64(len(wantList)) {
				t.Errorf("Count (Unordered %v): %d, %v, want %d", unordered, n, err, len(wantList))
			}
		}
		f := func(o *scatter.Options) {
			o.Filter, o.Names, o.Values = "#v >= :v", map[string]string{"#v": "v"}, map[string]types.AttributeValue{":v": nv("1000")}
		}
		if n, err := newScatter(t, c, l).Count(ctx, "day", f); err != nil || n != 20 {
			t.Errorf("Count with a filter: %d, %v, want the 20 rewritten ids", n, err)
		}
		// Get: newest count's key first, then older ones; an item is where
		// it was first written.
		sent.reset()
		wantGets := 0
		for id, n := range written {
			got, err := tbl.Get(ctx, "day", id)
			if err != nil || fmt.Sprintf("%s=%d", got.ID, got.V) != want[id] {
				t.Errorf("Get %s: %+v, %v, want %s", id, got, err, want[id])
			}
			wantGets += probes(id, []int{4, 8, 16}, n)
		}
		if g := sent.of("GetItem"); g != wantGets {
			t.Errorf("Gets sent %d GetItem, want %d (the probe order's)", g, wantGets)
		}
		if _, err := tbl.Get(ctx, "day", "absent"); !errors.Is(err, shard.ErrNotFound) {
			t.Errorf("Get absent: %v, want ErrNotFound", err)
		}
	})
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// probes is the GetItem requests a Get of id sends when the base's
// history is h and id was written at count n: one per distinct key, newest
// count's first, up to the one it was written at.
func probes(id string, h []int, n int) int {
	var keys []int
	for i := len(h) - 1; i >= 0; i-- {
		if k := shard.Hash(h[i]).Pick(id); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return slices.Index(keys, shard.Hash(n).Pick(id)) + 1
}

// TestReshardCount: Count counts an item written under each count of the
// history once (no id rewritten, so no copies).
func TestReshardCount(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, _ := countingClient(s.Endpoint)
		l := layout("", 'S', shard.Hash(3))
		tbl := reshardTable(t, s, c, &l)
		putRows(t, tbl, "day", 0, 20, 0)
		if _, err := tbl.Reshard(ctx, "day", 7); err != nil {
			t.Fatal(err)
		}
		putRows(t, tbl, "day", 20, 45, 0)
		sc := newScatter(t, c, l)
		if n, err := sc.Count(ctx, "day"); err != nil || n != 45 {
			t.Errorf("Count: %d, %v, want 45", n, err)
		}
		if n, err := sc.Count(ctx, "day", func(o *scatter.Options) { o.ConsistentRead = true }); err != nil || n != 45 {
			t.Errorf("Count consistent: %d, %v, want 45", n, err)
		}
	})
}

// TestReshardLookup: under Random, Lookup covers the suffixes of every
// count of the history.
func TestReshardLookup(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, _ := countingClient(s.Endpoint)
		l := layout("", 'S', shard.Random(2))
		tbl := reshardTable(t, s, c, &l)
		putRows(t, tbl, "day", 0, 10, 0)
		if _, err := tbl.Reshard(ctx, "day", 40); err != nil {
			t.Fatal(err)
		}
		putRows(t, tbl, "day", 10, 60, 0)
		sc := newScatter(t, c, l)
		seen := map[int]bool{}
		for i := range 60 {
			id := fmt.Sprintf("id-%03d", i)
			items, err := sc.Lookup(ctx, "day", sv(id))
			if err != nil || len(items) != 1 || items[0].Attrs["id"].(*typesS).Value != id {
				t.Fatalf("Lookup %s: %v, %v, want one item", id, items, err)
			}
			seen[items[0].Suffix] = true
		}
		if slices.Max(slices.Collect(mapsKeysInt(seen))) <= 2 {
			t.Errorf("every item in suffixes 1..2 (%v): the test wrote nothing under N=40", seen)
		}
	})
}

func mapsKeysInt(m map[int]bool) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestReshardCursor: a cursor made before a Reshard resumes exactly after
// it: the pages that follow hold every item after the cursor's position
// at the time they are read, each once, the new shards included.
func TestReshardCursor(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, _ := countingClient(s.Endpoint)
		l := layout("", 'S', shard.Hash(4))
		tbl := reshardTable(t, s, c, &l)
		putRows(t, tbl, "day", 0, 40, 0)
		// A reader in another process: its own client and cache.
		rc, _ := countingClient(s.Endpoint)
		rl := l
		rl.HistoryTTL = -1
		sc := newScatter(t, rc, rl)
		first, cur, err := sc.Page(ctx, "day", 15, "")
		if err != nil || len(first) != 15 || cur == "" {
			t.Fatalf("first page: %d items, %q, %v", len(first), cur, err)
		}
		if _, err := tbl.Reshard(ctx, "day", 16); err != nil {
			t.Fatal(err)
		}
		putRows(t, tbl, "day", 40, 80, 0)   // after the cursor, some in new shards
		putRows(t, tbl, "day", 100, 105, 0) // more of them
		last := values(t, first)[14]
		var want []string
		for i := 0; i < 105; i++ {
			if i >= 80 && i < 100 {
				continue
			}
			if v := fmt.Sprintf("id-%03d=%d", i, i); v > last {
				want = append(want, v)
			}
		}
		sort.Strings(want)
		var got []string
		for cur != "" {
			var items []scatter.Item
			items, cur, err = sc.Page(ctx, "day", 6, cur)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, values(t, items)...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages after the Reshard: (-got +want)\n%s", cmp.Diff(got, want))
		}
	})
}

// TestReshardConcurrentWriters: writers in separate processes (a client
// and cache each, HistoryTTL 20 ms) keep writing while the base grows
// 4 → 8 → 16, with throttling and 500s from the proxy: every write that
// succeeded is read back exactly once by All and Page, and found by Get.
func TestReshardConcurrentWriters(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		p := newProxy(t, s.Endpoint, faultproxy.Config{
			ThrottleRate: 0.1, ErrorAfterRate: 0.05, Ops: []string{"PutItem"}, Seed: 3,
		})
		l := layout("", 'S', shard.Hash(4))
		l.HistoryTTL = 20 * time.Millisecond
		admin := reshardTable(t, s, s.Client(), &l)
		putRows(t, admin, "day", 0, 1, 0)
		const writers, each = 4, 40
		var wg sync.WaitGroup
		ok := make([][]string, writers)
		for w := range writers {
			c, _ := testClient(p.URL(), fastRetries(3))
			tbl, err := shard.NewTable[row](c, l)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					id := fmt.Sprintf("w%d-%03d", w, i)
					if err := tbl.Put(ctx, "day", row{SK: id, ID: id, V: i}); err == nil {
						ok[w] = append(ok[w], id)
					}
					time.Sleep(time.Millisecond)
				}
			}()
		}
		for _, n := range []int{8, 16} {
			time.Sleep(15 * time.Millisecond)
			if _, err := admin.Reshard(ctx, "day", n); err != nil {
				t.Error(err)
			}
		}
		wg.Wait()
		want := []string{"id-000"}
		for _, ids := range ok {
			want = append(want, ids...)
		}
		sort.Strings(want)
		if len(want) < writers*each/2 {
			t.Fatalf("only %d writes succeeded", len(want))
		}
		sc := newScatter(t, s.Client(), l, func(o *scatter.Options) { o.ConsistentRead = true })
		idsOf := func(items []scatter.Item) []string {
			var out []string
			for _, it := range items {
				out = append(out, it.Attrs["id"].(*typesS).Value)
			}
			return out
		}
		// Writes that failed after being applied (a 500 after the write)
		// may be there too: the reads must hold every acknowledged write,
		// each once, and nothing else than attempted ids.
		check := func(name string, got []string) {
			t.Helper()
			if dup := duplicates(got); len(dup) > 0 {
				t.Errorf("%s: duplicates %v", name, dup)
			}
			for _, id := range want {
				if _, found := slices.BinarySearch(got, id); !found {
					t.Errorf("%s: acknowledged %s missing", name, id)
				}
			}
		}
		check("All", idsOf(collect(t, sc.All(ctx, "day"))))
		check("Page", idsOf(pages(t, sc, read{l: l, base: "day", o: scatter.Options{ConsistentRead: true}}, 9)))
		for _, id := range want {
			if _, err := admin.Get(ctx, "day", id); err != nil {
				t.Errorf("Get %s: %v", id, err)
			}
		}
		if p.Stats().Total.Requests == 0 {
			t.Error("no request went through the proxy")
		}
	})
}

func duplicates(sorted []string) []string {
	var d []string
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			d = append(d, sorted[i])
		}
	}
	return d
}

type typesS = types.AttributeValueMemberS

// TestReshardUnderFaults: with throttling, 500s, resets and truncated
// bodies on Query, a Page walk over a base written under [3, 6, 12] (with
// copies) that retries a failed call with the same cursor yields every
// item once, and All, retried whole, does too.
func TestReshardUnderFaults(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := layout("", 'S', shard.Hash(3))
		tbl := reshardTable(t, s, s.Client(), &l)
		var want []string
		putRows(t, tbl, "day", 0, 20, 0)
		for _, n := range []int{6, 12} {
			if _, err := tbl.Reshard(ctx, "day", n); err != nil {
				t.Fatal(err)
			}
			putRows(t, tbl, "day", 20*n/6, 20*n/6+20, 0)
		}
		for i := 0; i < 60; i += 5 {
			putRows(t, tbl, "day", i, i+1, 1000) // copies
		}
		for _, it := range collect(t, newScatter(t, s.Client(), l).All(ctx, "day")) {
			want = append(want, values(t, []scatter.Item{it})...)
		}
		if len(want) != 60 {
			t.Fatalf("reference read: %d items, want 60", len(want))
		}
		p := newProxy(t, s.Endpoint, faultproxy.Config{
			ThrottleRate: 0.1, ErrorRate: 0.05, ErrorAfterRate: 0.05, ResetBeforeRate: 0.05, TruncateRate: 0.05,
			Ops: []string{"Query"}, Seed: 9,
		})
		c, _ := testClient(p.URL(), fastRetries(2))
		sc := newScatter(t, c, l, func(o *scatter.Options) { o.PageSize = 3 })
		var got []string
		var cur scatter.Cursor
		for calls := 0; ; calls++ {
			if calls > 2000 {
				t.Fatal("too many calls")
			}
			items, next, err := sc.Page(ctx, "day", 4, cur)
			if err != nil {
				var se *scatter.ShardError
				if !errors.As(err, &se) {
					t.Fatalf("got %v, want a *ShardError", err)
				}
				continue // the same cursor again
			}
			got = append(got, values(t, items)...)
			if next == "" {
				break
			}
			cur = next
		}
		if !slices.Equal(got, want) {
			t.Errorf("Page walk: (-got +want)\n%s", cmp.Diff(got, want))
		}
		done := false
		for range 50 {
			var all []string
			var err error
			for it, e := range sc.All(ctx, "day") {
				if err = e; e != nil {
					break
				}
				all = append(all, values(t, []scatter.Item{it})...)
			}
			if err == nil {
				if !slices.Equal(all, want) {
					t.Errorf("All: (-got +want)\n%s", cmp.Diff(all, want))
				}
				done = true
				break
			}
		}
		if !done {
			t.Error("All failed 50 times in a row")
		}
		if p.Stats().Total.Requests == 0 {
			t.Error("nothing went through the proxy")
		}
	})
}

// TestRebalanceCursor: a cursor taken before a Reshard and a Rebalance
// that moved the item it stopped at (with Hash, 3 in 4 items move from
// N=4 to N=16) resumes after that item: nothing is returned twice or
// missed (issue 19, class 7). Every position of a 40-item day is tried.
func TestRebalanceCursor(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, _ := countingClient(s.Endpoint)
		l := layout("", 'S', shard.Hash(4))
		tbl := reshardTable(t, s, c, &l)
		putRows(t, tbl, "day", 0, 40, 0)
		rl := l
		rl.HistoryTTL = -1
		sc := newScatter(t, c, rl)
		var cursors []scatter.Cursor
		var lasts []string
		for cur := scatter.Cursor(""); ; {
			items, next, err := sc.Page(ctx, "day", 1, cur)
			if err != nil || len(items) != 1 {
				t.Fatalf("page after %q: %d items, %v", cur, len(items), err)
			}
			if next == "" {
				break
			}
			cursors, lasts = append(cursors, next), append(lasts, values(t, items)[0])
			cur = next
		}
		if _, err := tbl.Reshard(ctx, "day", 16); err != nil {
			t.Fatal(err)
		}
		if p, err := tbl.Rebalance(ctx, "day"); err != nil || p.Moved == 0 {
			t.Fatalf("Rebalance: %+v, %v", p, err)
		}
		for i, cur := range cursors {
			var want, got []string
			for j := range 40 {
				if v := fmt.Sprintf("id-%03d=%d", j, j); v > lasts[i] {
					want = append(want, v)
				}
			}
			for cur != "" {
				items, next, err := sc.Page(ctx, "day", 100, cur)
				if err != nil {
					t.Fatal(err)
				}
				got, cur = append(got, values(t, items)...), next
			}
			if !slices.Equal(got, want) {
				t.Errorf("resumed after %s: (-got +want)\n%s", lasts[i], cmp.Diff(got, want))
			}
		}
	})
}
