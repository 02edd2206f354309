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
// a real server.
type replay struct {
	items map[string][]map[string]types.AttributeValue // by physical key, in order
	at    map[string]map[string]int                    // physical key → sk → index in items
}

func newReplay(base string, shards, perShard int) *replay {
	r := &replay{items: map[string][]map[string]types.AttributeValue{}, at: map[string]map[string]int{}}
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
		out := &dynamodb.QueryOutput{Items: items[start : start+n : start+n], Count: int32(n), ScannedCount: int32(n)}
		if start+n < len(items) {
			last := items[start+n-1]
			out.LastEvaluatedKey = map[string]types.AttributeValue{"pk": last["pk"], "sk": last["sk"]}
		}
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
			"is in these figures (scenario 2 has the end-to-end times). *heap merge*: scatter.All, ordered; *PageSize %d*: the same with whole 1,000-item pages. "+
			"*collect and sort*: scatter.All with Unordered, then a stable sort of every item by sort key "+
			"(internal/keyorder, parsed once per item). *no order*: scatter.All with Unordered alone, the fan-out's cost "+
			"without any ordering. Each method runs for at least %s; cpu-ns counts every thread of the process (the garbage "+
			"collector's too) and, on a shared machine, is the fairer figure: wall time there includes waiting for a core.",
		c.mergeShards, c.mergeItems, total, mergePage, max(256, 32768/c.mergeShards), c.mergeShards, mergePage, c.mergeTime))
	t := sec.table("method", "ns/item", "cpu-ns/item", "allocs/item", "bytes/item", "runs")

	type keyed struct {
		key keyorder.Key
		it  scatter.Item
	}
	methods := []struct {
		name string
		run  func(ctx context.Context) (int, error)
	}{
		{"heap merge (scatter.All)", func(ctx context.Context) (int, error) { return checkOrder(sc.All(ctx, base)) }},
		{fmt.Sprintf("heap merge, PageSize %d (scatter.All)", mergePage), func(ctx context.Context) (int, error) {
			return checkOrder(sc.All(ctx, base, func(o *scatter.Options) { o.PageSize = mergePage }))
		}},
		{"collect and sort", func(ctx context.Context) (int, error) {
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
			return len(all), nil
		}},
		{"no order (scatter.All, Unordered)", func(ctx context.Context) (int, error) {
			n := 0
			for _, err := range sc.All(ctx, base, unordered) {
				if err != nil {
					return n, err
				}
				n++
			}
			return n, nil
		}},
	}
	var heapNs, sortNs float64
	for _, m := range methods {
		b.prog.status(m.name)
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		s0 := sampleCPU()
		runs := 0
		for runs == 0 || time.Since(s0.at) < c.mergeTime {
			n, err := m.run(ctx)
			if err != nil {
				return sec, fmt.Errorf("%s: %w", m.name, err)
			}
			if n != total {
				return sec, fmt.Errorf("%s: %d items, want %d", m.name, n, total)
			}
			runs++
		}
		s1 := sampleCPU()
		runtime.ReadMemStats(&m1)
		items := float64(runs * total)
		wall := float64(s1.at.Sub(s0.at).Nanoseconds()) / items
		switch m.name {
		case methods[0].name:
			heapNs = wall
		case methods[2].name:
			sortNs = wall
		}
		t.row(m.name, fmt.Sprintf("%.0f", wall), fmt.Sprintf("%.0f", float64((s1.self-s0.self).Nanoseconds())/items),
			fmt.Sprintf("%.2f", float64(m1.Mallocs-m0.Mallocs)/items), fmt.Sprintf("%.0f", float64(m1.TotalAlloc-m0.TotalAlloc)/items),
			fmt.Sprint(runs))
	}
	if heapNs > 0 && sortNs > 0 {
		sec.notes = append(sec.notes, fmt.Sprintf("The heap merge takes %.2f× the time of collect-and-sort per item, and unlike it "+
			"yields the first item after one page per shard and holds at most two pages per shard in memory. "+
			"The micro-benchmark without the fan-out is `go test -bench Merge ./scatter`.", heapNs/sortNs))
	}
	return sec, nil
}
