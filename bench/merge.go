package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// mergePage is the items per replayed Query page: about DynamoDB's 1 MB
// page of 1 KB items.
const mergePage = 1000

// replay answers scatter's Queries from items held in memory, shaped as
// DynamoDB returns them: each shard's items in sort-key order, at most
// 1,000 to a page (about DynamoDB's 1 MB page of 1 KB items) or the
// request's Limit if smaller, LastEvaluatedKey on every page but the last.
// It exists to time the library's own work per item, with no server,
// network or SDK decoding in the figure; every other scenario goes through
// a real server. A page it returned once is kept and returned again, so
// that after a method's first run the replay allocates nothing and the
// allocations counted are the library's. It reads every item's sort key
// before returning a page, as decoding the response would have written
// it: behind the SDK, the request goroutine finds the page in its cache.
type replay struct {
	items map[string][]map[string]types.AttributeValue // by physical key, in order
	at    map[string]map[string]int                    // physical key → sk → index in items
	mu    sync.Mutex
	pages map[pageKey]*dynamodb.QueryOutput
	sink  atomic.Uint64 // what reading the sort keys found, so that the compiler keeps the reads
}

type pageKey struct {
	pk       string
	start, n int
}

func newReplay(base string, shards, perShard int) *replay {
	r := &replay{items: map[string][]map[string]types.AttributeValue{}, at: map[string]map[string]int{},
		pages: map[pageKey]*dynamodb.QueryOutput{}}
	rng := rand.New(rand.NewPCG(5, 6))
	for s := 1; s <= shards; s++ {
		pk := shard.Key(base, s)
		sks := make([]string, perShard)
		for i := range sks {
			sks[i] = fmt.Sprintf("2014-07-09T%02d:%02d:%02d.%03dZ#%06d",
				rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000), rng.IntN(1_000_000))
		}
		slices.Sort(sks)
		r.at[pk] = map[string]int{}
		items := make([]map[string]types.AttributeValue, 0, perShard)
		for i, sk := range sks {
			// Fresh copies, as the SDK makes when it decodes a page: the
			// keys were generated before sorting, and reusing their bytes
			// would scatter them over memory in an order no response has.
			items = append(items, map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: pk},
				"sk": &types.AttributeValueMemberS{Value: strings.Clone(sk)},
			})
			r.at[pk][sk] = i
		}
		r.items[pk] = items
	}
	return r
}

func (r *replay) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	for _, v := range in.ExpressionAttributeValues {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			continue
		}
		items, ok := r.items[s.Value]
		if !ok {
			continue
		}
		start := 0
		if esk, ok := in.ExclusiveStartKey["sk"].(*types.AttributeValueMemberS); ok {
			i, ok := r.at[s.Value][esk.Value]
			if !ok {
				return nil, fmt.Errorf("replay: no item %q in %q", esk.Value, s.Value)
			}
			start = i + 1
		}
		n := mergePage
		if in.Limit != nil {
			n = min(n, int(*in.Limit))
		}
		n = min(n, len(items)-start)
		k := pageKey{s.Value, start, n}
		r.mu.Lock()
		out, ok := r.pages[k]
		if !ok {
			out = &dynamodb.QueryOutput{Items: items[start : start+n : start+n], Count: int32(n), ScannedCount: int32(n)}
			if start+n < len(items) {
				last := items[start+n-1]
				out.LastEvaluatedKey = map[string]types.AttributeValue{"pk": last["pk"], "sk": last["sk"]}
			}
			r.pages[k] = out
		}
		r.mu.Unlock()
		var sum uint64
		for _, it := range out.Items {
			sk := it["sk"].(*types.AttributeValueMemberS).Value
			sum += uint64(sk[len(sk)-1])
		}
		r.sink.Add(sum)
		return out, nil
	}
	return nil, errors.New("replay: query for an unknown key")
}

// GetItem answers the layout check; the replay's layout is Unchecked, so
// it is never called.
func (r *replay) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func (r *replay) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return nil, errors.New("replay: BatchGetItem not recorded")
}

// count counts the items of a read.
func count(seq iter.Seq2[scatter.Item, error]) (int, error) {
	n := 0
	for _, err := range seq {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// checkOrder counts the items of an ordered read, checking their order.
func checkOrder(seq iter.Seq2[scatter.Item, error]) (int, error) {
	n := 0
	var prev string
	for it, err := range seq {
		if err != nil {
			return n, err
		}
		sk := it.Attrs["sk"].(*types.AttributeValueMemberS).Value
		if sk < prev {
			return n, fmt.Errorf("merge out of order: %q after %q", sk, prev)
		}
		prev = sk
		n++
	}
	return n, nil
}

// merge is scenario 3: what merging costs per item, the library's heap
// merge (scatter.All) against collecting everything and sorting it.
func (b *bencher) merge(ctx context.Context) (*section, error) {
	c := b.cfg
	total := c.mergeShards * c.mergeItems
	b.prog.status(fmt.Sprintf("building %d shards × %d items", c.mergeShards, c.mergeItems))
	const base = "2014-07-09"
	rp := newReplay(base, c.mergeShards, c.mergeItems)
	layout := shard.Layout{Table: "replay", PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(c.mergeShards), Unchecked: true}
	sc, err := scatter.New(rp, layout)
	if err != nil {
		return nil, err
	}
	unordered := func(o *scatter.Options) { o.Unordered = true }

	sec := &section{title: "Merge"}
	sec.intro = append(sec.intro, fmt.Sprintf(
		"%d shards × %d items (%d in all, string sort keys), each shard's items in order in pages of at most %d or the request's Limit, as Query returns them "+
			"(scatter.All's default pages grow from 100 items to %d at N = %d). "+
			"To time the library's own work per item, the pages are served from memory: no server, network or SDK decoding "+
			"is in these figures (scenario 2 has the end-to-end times); a page served once is served again from the same memory, "+
			"so the replay allocates nothing in the timed runs, and it reads each item's sort key before returning a page, as decoding "+
			"the response would have written it. *heap merge*: scatter.All, ordered; *PageSize %d*: the same with whole 1,000-item pages. "+
			"*collect and sort*: scatter.All with Unordered, then a stable sort of every item by sort key "+
			"(internal/keyorder, parsed once per item). *no order*: scatter.All with Unordered alone, the fan-out's cost "+
			"without any ordering; *over no order* is what ordering adds to it per item. Each method's first run checks the order and count "+
			"of every item, untimed; the timed runs only count them, the methods taking turns in a shuffled order "+
			"for at least %s per method on average. cpu-ns counts every thread of the process (the garbage "+
			"collector's too) and, on a shared machine, is the fairer figure: wall time there includes waiting for a core.",
		c.mergeShards, c.mergeItems, total, mergePage, max(256, 32768/c.mergeShards), c.mergeShards, mergePage, c.mergeTime))
	t := sec.table("method", "ns/item", "cpu-ns/item", "cpu-ns/item over no order", "allocs/item", "bytes/item", "runs")
	var rows [][]string

	type keyed struct {
		key keyorder.Key
		it  scatter.Item
	}
	// Every method's first run checks its order and count, untimed; the
	// timed runs only count, so that the figures hold the method's own work
	// and not a check's reading every item.
	ordered := func(opts ...func(*scatter.Options)) func(context.Context, bool) (int, error) {
		return func(ctx context.Context, check bool) (int, error) {
			if check {
				return checkOrder(sc.All(ctx, base, opts...))
			}
			return count(sc.All(ctx, base, opts...))
		}
	}
	methods := []struct {
		name string
		run  func(ctx context.Context, check bool) (int, error)
	}{
		{"heap merge (scatter.All)", ordered()},
		{fmt.Sprintf("heap merge, PageSize %d (scatter.All)", mergePage), ordered(func(o *scatter.Options) { o.PageSize = mergePage })},
		{"collect and sort", func(ctx context.Context, check bool) (int, error) {
			all := make([]keyed, 0, total)
			for it, err := range sc.All(ctx, base, unordered) {
				if err != nil {
					return len(all), err
				}
				k, err := keyorder.Parse(it.Attrs["sk"])
				if err != nil {
					return len(all), err
				}
				all = append(all, keyed{k, it})
			}
			slices.SortStableFunc(all, func(a, b keyed) int {
				if c := a.key.Compare(&b.key); c != 0 {
					return c
				}
				return a.it.Suffix - b.it.Suffix
			})
			if check {
				return checkOrder(func(yield func(scatter.Item, error) bool) {
					for _, k := range all {
						if !yield(k.it, nil) {
							return
						}
					}
				})
			}
			return len(all), nil
		}},
		{"no order (scatter.All, Unordered)", func(ctx context.Context, _ bool) (int, error) {
			return count(sc.All(ctx, base, unordered))
		}},
	}
	// The methods take turns, in an order shuffled each round, so that
	// drift in the machine's speed or one method's garbage shows in every
	// method's figures alike. (A collection before each run would empty
	// the runtime's pools and count their refilling as the run's.)
	type sum struct {
		wall, cpu        time.Duration
		mallocs, alloced uint64
		runs             int
	}
	totals := make([]sum, len(methods))
	for _, m := range methods {
		b.prog.status(m.name + ": checking")
		if n, err := m.run(ctx, true); err != nil || n != total {
			return sec, fmt.Errorf("%s: %d items (want %d), %v", m.name, n, total, err)
		}
	}
	order := rand.New(rand.NewPCG(3, 4))
	runtime.GC()
	for start := time.Now(); totals[0].runs == 0 || time.Since(start) < time.Duration(len(methods))*c.mergeTime; {
		for _, mi := range order.Perm(len(methods)) {
			m := methods[mi]
			b.prog.status(m.name)
			// Sampling the CPU allocates: outside the count of allocations.
			var m0, m1 runtime.MemStats
			s0 := sampleCPU()
			runtime.ReadMemStats(&m0)
			n, err := m.run(ctx, false)
			runtime.ReadMemStats(&m1)
			s1 := sampleCPU()
			if err != nil {
				return sec, fmt.Errorf("%s: %w", m.name, err)
			}
			if n != total {
				return sec, fmt.Errorf("%s: %d items, want %d", m.name, n, total)
			}
			t := &totals[mi]
			t.wall += s1.at.Sub(s0.at)
			t.cpu += s1.self - s0.self
			t.mallocs += m1.Mallocs - m0.Mallocs
			t.alloced += m1.TotalAlloc - m0.TotalAlloc
			t.runs++
		}
	}
	cpu := make([]float64, len(methods))
	var heapNs, sortNs float64
	for mi, m := range methods {
		t := totals[mi]
		items := float64(t.runs * total)
		wall := float64(t.wall.Nanoseconds()) / items
		cpu[mi] = float64(t.cpu.Nanoseconds()) / items
		switch mi {
		case 0:
			heapNs = wall
		case 2:
			sortNs = wall
		}
		rows = append(rows, []string{m.name, fmt.Sprintf("%.0f", wall), fmt.Sprintf("%.0f", cpu[mi]), "",
			fmt.Sprintf("%.3f", float64(t.mallocs)/items), fmt.Sprintf("%.0f", float64(t.alloced)/items),
			fmt.Sprint(t.runs)})
	}
	// What ordering costs: each method's CPU over the unordered fan-out's,
	// which reads the same pages and returns the same items.
	base0 := cpu[len(cpu)-1]
	for i, row := range rows {
		if i == len(rows)-1 {
			row[3] = "–"
		} else {
			row[3] = fmt.Sprintf("%.0f", cpu[i]-base0)
		}
		t.row(row...)
	}
	if heapNs > 0 && sortNs > 0 {
		sec.notes = append(sec.notes, fmt.Sprintf("The heap merge takes %.2f× the time of collect-and-sort per item, and unlike it "+
			"yields the first item after one page per shard and holds at most two pages per shard in memory; "+
			"ordering costs it %.0f cpu-ns per item over the unordered fan-out (collect and sort: %.0f). "+
			"The micro-benchmark without the fan-out is `go test -bench Merge ./scatter`.", heapNs/sortNs, cpu[0]-base0, cpu[2]-base0))
	}
	return sec, nil
}
