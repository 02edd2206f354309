package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// streamResult is one method of scenario 2's streaming read: medians over
// the timed reads.
type streamResult struct {
	name      string
	first     time.Duration // until the first item is in the caller's hands
	total     time.Duration // until the last
	heap      uint64        // peak heap in use during the read, above the heap before it
	queries   int64         // Query requests per read (scatter's Stats; the baseline's count)
	itemsRead int
}

// stream is scenario 2's second table: a large day (N shards × -stream-items
// items of 230 bytes) read whole by scatter.All at its defaults beside the
// errgroup + sort a user writes by hand, timing the first item as well as
// the last and sampling the heap. The proxy adds latency to every Query and
// models no capacity, so that the read is paced by the server alone.
func (b *bencher) stream(ctx context.Context, sec *section, endpoint string, direct *dynamodb.Client, table string, n int) error {
	c := b.cfg
	base := fmt.Sprintf("stream%d", n)
	total := n * c.streamItems
	b.prog.status(fmt.Sprintf("stream N=%d: loading %d items", n, total))
	layout := shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(n)}
	tbl, err := shard.NewTable[benchItem](direct, layout)
	if err != nil {
		return err
	}
	items := func(yield func(string, benchItem) bool) {
		for i := range total {
			if !yield(base, benchItem{SK: fmt.Sprintf("EV-%08d", i), Payload: benchPayload}) {
				return
			}
		}
	}
	if _, err := tbl.Load(ctx, items); err != nil {
		return err
	}
	p, err := newProxy(endpoint, faultproxy.Config{Latency: c.latency, Ops: []string{"Query"}})
	if err != nil {
		return err
	}
	defer p.Close()
	cl := b.client(p.URL(), n)
	def, err := scatter.New(cl, layout)
	if err != nil {
		return err
	}
	whole, err := scatter.New(cl, layout, func(o *scatter.Options) { o.PageSize = int32(c.streamItems) })
	if err != nil {
		return err
	}
	scatterRead := func(s *scatter.Scatter) func(context.Context, func()) (int, error) {
		return func(ctx context.Context, first func()) (int, error) {
			got := 0
			for _, err := range s.All(ctx, base) {
				if err != nil {
					return got, err
				}
				if got == 0 {
					first()
				}
				got++
			}
			return got, nil
		}
	}
	methods := []struct {
		name string
		read func(context.Context, func()) (int, error)
		sc   *scatter.Scatter
		runs []streamResult
	}{
		{name: "errgroup + sort", read: func(ctx context.Context, first func()) (int, error) {
			all, err := errgroupSort(ctx, cl, table, base, n)
			if err == nil && len(all) > 0 {
				first()
			}
			return len(all), err
		}},
		{name: "scatter.All, defaults", read: scatterRead(def), sc: def},
		{name: fmt.Sprintf("scatter.All, PageSize %d (whole shards)", c.streamItems), read: scatterRead(whole), sc: whole},
	}
	order := rand.New(rand.NewPCG(uint64(n), 3)) // a shuffled order each round, as readStep's
	for i := range c.reps + 1 {
		for _, j := range order.Perm(len(methods)) {
			m := &methods[j]
			b.prog.status(fmt.Sprintf("stream N=%d: %s", n, m.name))
			var q0 int64
			if m.sc != nil {
				q0 = m.sc.Stats().Queries
			}
			r, err := measureStream(ctx, m.read)
			if err != nil {
				return fmt.Errorf("stream at N=%d, %s: %w", n, m.name, err)
			}
			if r.itemsRead != total {
				return fmt.Errorf("stream at N=%d, %s: %d items, want %d", n, m.name, r.itemsRead, total)
			}
			r.queries = int64(n) // one page per shard: each shard's items fit in 1 MB
			if m.sc != nil {
				r.queries = m.sc.Stats().Queries - q0
			}
			if i > 0 {
				m.runs = append(m.runs, r)
			}
		}
	}
	sec.notes = append(sec.notes, fmt.Sprintf(
		"A large day: N = %d shards × %d items (%d items of 230 bytes), read whole, %s added to every Query, no capacity "+
			"model. *first item*: until the first item is in the caller's hands; *heap*: the peak of the Go heap in use "+
			"during the read (runtime/metrics, sampled every millisecond) above the heap before it, the in-process proxy "+
			"included. Medians of %d reads each, the methods taking turns in a shuffled order; ratios against errgroup + sort.",
		n, c.streamItems, total, c.latency, c.reps))
	t := sec.table("method", "first item", "total", "peak heap", "Queries", "first item ÷ errgroup", "total ÷ errgroup", "heap ÷ errgroup")
	var ref streamResult
	for j, m := range methods {
		r := streamMedian(m.name, m.runs)
		if j == 0 {
			ref = r
		}
		t.row(m.name, ms(r.first), ms(r.total), fmt.Sprintf("%.1f MiB", float64(r.heap)/(1<<20)), fmt.Sprint(r.queries),
			ratio(r.first, ref.first), ratio(r.total, ref.total), fmt.Sprintf("%.2f×", float64(r.heap)/float64(max(ref.heap, 1))))
	}
	return nil
}

func ratio(a, b time.Duration) string { return fmt.Sprintf("%.2f×", float64(a)/float64(max(b, 1))) }

// measureStream runs one read after a collection, timing its first item
// (when read calls first) and its end, and sampling the heap in use.
func measureStream(ctx context.Context, read func(context.Context, func()) (int, error)) (streamResult, error) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	var r streamResult
	start := time.Now()
	got, err := read(ctx, func() { r.first = time.Since(start) })
	r.total = time.Since(start)
	close(stop)
	wg.Wait()
	r.itemsRead = got
	if peak > before {
		r.heap = peak - before
	}
	return r, err
}

// streamMedian takes each figure's median over runs.
func streamMedian(name string, runs []streamResult) streamResult {
	r := streamResult{name: name}
	var first, total []time.Duration
	var heap []uint64
	for _, x := range runs {
		first, total, heap = append(first, x.first), append(total, x.total), append(heap, x.heap)
		r.queries = x.queries
	}
	r.first, r.total = median(first), median(total)
	slices.Sort(heap)
	if len(heap) > 0 {
		r.heap = heap[len(heap)/2]
	}
	return r
}
