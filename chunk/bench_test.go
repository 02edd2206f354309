package chunk

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/batch"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
)

// Benchmarks of a 64 MiB payload, against the first selected server
// (DYNASHARD_SERVER; DynamoDB Local by default). Timed iterations talk to
// the server directly; capacity units are counted in one more, untimed,
// iteration through a fault-free proxy (1 WCU per 1 KB written, 1 RCU per
// 4 KB read consistently, half that eventually), because the proxy parses
// every body and would dominate the CPU of a 2-core machine. Reported per
// op:
//
//	MB/s          payload throughput
//	requests      calls made; min-requests the fewest possible
//	              (write: 1 GetItem + ⌈chunks/25⌉ BatchWriteItem + 1 UpdateItem;
//	              read: 1 GetItem + ⌈chunks/40⌉ BatchGetItem)
//	units         capacity units charged by the proxy; min-units what the
//	              chunk items alone cost
//	peak-B/B      peak heap growth during the op per payload byte (sampled)
//
// Baselines: "naive" is a sequential PutItem (GetItem) loop over the same
// chunk items; "batch" is the batch engine writing the same chunk items in
// parallel with nothing else (the target is store ≥ 0.9× batch).

const benchSize = 64 << 20

type benchEnv struct {
	e       *env
	c       *dynamodb.Client // direct, its requests counted by h
	h       *probe
	proxied Client
	proxy   *faultproxy.Proxy
	st      *Store
	data    []byte
}

func newBenchEnv(b *testing.B) *benchEnv {
	srv, err := ddbtest.Default()
	if err != nil {
		b.Fatal(err)
	}
	e := newEnv(b, srv)
	proxy, err := faultproxy.New(srv.Endpoint, faultproxy.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { proxy.Close() })
	h := newProbe()
	c := robustClient(srv.Endpoint, h.option)
	b.Logf("server %s, GOMAXPROCS %d", srv.Kind, runtime.GOMAXPROCS(0))
	be := &benchEnv{e: e, c: c, h: h, proxied: robustClient(proxy.URL()), proxy: proxy,
		st: newStore(b, c, e.parents, e.chunks), data: payload(benchSize, 1, false)}
	// Warm the server (a JVM for DynamoDB Local) so that the first
	// sub-benchmark is not charged for it.
	ctx := context.Background()
	key := sKey("warm-up")
	for range 2 {
		if _, err := be.st.Put(ctx, key, be.data); err != nil {
			b.Fatal(err)
		}
		if _, _, err := be.st.Get(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
	if err := be.st.Delete(ctx, key); err != nil {
		b.Fatal(err)
	}
	return be
}

// chunkItems returns the chunk items the store writes for key and data.
func (be *benchEnv) chunkItems(b *testing.B, key Key, version string) []map[string]types.AttributeValue {
	prefix, _ := key.prefix()
	var items []map[string]types.AttributeValue
	for seq, lo := 1, 0; lo < len(be.data); seq, lo = seq+1, lo+DefaultChunkSize {
		items = append(items, map[string]types.AttributeValue{
			"ChunkKey": &types.AttributeValueMemberS{Value: chunkKey(prefix, version, seq)},
			"Data":     &types.AttributeValueMemberB{Value: be.data[lo:min(lo+DefaultChunkSize, len(be.data))]},
			"Parent":   &types.AttributeValueMemberM{Value: key.item()},
		})
	}
	return items
}

// minUnits is what writing (or reading) items costs at least.
func minUnits(b *testing.B, items []map[string]types.AttributeValue, read bool) float64 {
	total := 0.0
	for _, it := range items {
		n, err := ddbsize.ItemSize(it)
		if err != nil {
			b.Fatal(err)
		}
		if read {
			total += float64((n+4095)/4096) / 2 // eventually consistent
		} else {
			total += float64((n + 1023) / 1024)
		}
	}
	return total
}

// peakHeap samples the heap while f runs and returns its peak growth.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
				peak.Store(ms.HeapAlloc - base)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	return peak.Load()
}

// clear deletes items with the timer stopped, as the store sub-benchmark
// deletes its payload: every sub-benchmark then writes into a table of the
// same size, and pays for the server's clean-up alike.
func (be *benchEnv) clear(b *testing.B, items []map[string]types.AttributeValue) {
	b.StopTimer()
	defer b.StartTimer()
	writes := make([]batch.Write, len(items))
	for j, it := range items {
		writes[j] = batch.Write{Table: be.e.chunks, Delete: map[string]types.AttributeValue{"ChunkKey": it["ChunkKey"]}}
	}
	if _, err := batch.WriteAll(context.Background(), be.e.c, writes); err != nil {
		b.Fatal(err)
	}
}

// measure runs f once more, untimed, through the proxy, and returns the
// capacity units it cost.
func (be *benchEnv) measure(b *testing.B, write bool, f func(c Client)) float64 {
	b.StopTimer()
	defer b.StartTimer()
	be.proxy.ResetStats()
	f(be.proxied)
	return be.units(write)
}

func (be *benchEnv) units(write bool) float64 {
	total := 0.0
	for _, c := range be.proxy.Stats().Ops {
		if write {
			total += c.WCU
		} else {
			total += c.RCU
		}
	}
	return total
}

func (be *benchEnv) report(b *testing.B, requests int, minRequests int, units, min float64, peak uint64) {
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
	b.ReportMetric(float64(minRequests), "min-requests/op")
	b.ReportMetric(units, "units/op")
	b.ReportMetric(min, "min-units/op")
	b.ReportMetric(float64(peak)/benchSize, "peak-B/B")
}

func BenchmarkPut64MiB(b *testing.B) {
	be := newBenchEnv(b)
	ctx := context.Background()
	chunks := (benchSize + DefaultChunkSize - 1) / DefaultChunkSize
	minWrite := minUnits(b, be.chunkItems(b, sKey("bench-0"), newVersion(time.Now())), false)

	b.Run("store", func(b *testing.B) {
		b.SetBytes(benchSize)
		b.ReportAllocs()
		var requests int
		var peak uint64
		for i := 0; b.Loop(); i++ {
			key := sKey(fmt.Sprint("bench-", i))
			be.h.reset()
			peak = max(peak, peakHeap(func() {
				if _, err := be.st.Put(ctx, key, be.data); err != nil {
					b.Fatal(err)
				}
			}))
			requests += be.h.total()
			b.StopTimer()
			if err := be.st.Delete(ctx, key); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		units := be.measure(b, true, func(c Client) {
			st := newStore(b, c, be.e.parents, be.e.chunks)
			if _, err := st.Put(ctx, sKey(fmt.Sprint("units-", time.Now().UnixNano())), be.data); err != nil {
				b.Fatal(err)
			}
		})
		be.report(b, requests, 1+(chunks+24)/25+1, units, minWrite, peak)
	})

	// writeItems writes the chunk items of one payload with the batch engine.
	writeItems := func(b *testing.B, c Client, items []map[string]types.AttributeValue) {
		writes := make([]batch.Write, len(items))
		for j, it := range items {
			writes[j] = batch.Write{Table: be.e.chunks, Put: it}
		}
		if _, err := batch.WriteAll(ctx, c, writes, func(o *batch.Options) { o.MaxConcurrency = be.st.opts.MaxConcurrency }); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("batch", func(b *testing.B) {
		b.SetBytes(benchSize)
		b.ReportAllocs()
		var requests int
		var peak uint64
		for i := 0; b.Loop(); i++ {
			items := be.chunkItems(b, sKey(fmt.Sprint("raw-", i)), newVersion(time.Now()))
			be.h.reset()
			peak = max(peak, peakHeap(func() { writeItems(b, be.c, items) }))
			requests += be.h.total()
			be.clear(b, items)
		}
		units := be.measure(b, true, func(c Client) { writeItems(b, c, be.chunkItems(b, sKey("raw"), newVersion(time.Now()))) })
		be.report(b, requests, (chunks+24)/25, units, minWrite, peak)
	})

	// putItems writes the chunk items of one payload one PutItem at a time.
	putItems := func(b *testing.B, c *dynamodb.Client, items []map[string]types.AttributeValue) {
		for _, it := range items {
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &be.e.chunks, Item: it}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("naive", func(b *testing.B) {
		b.SetBytes(benchSize)
		b.ReportAllocs()
		var peak uint64
		for i := 0; b.Loop(); i++ {
			items := be.chunkItems(b, sKey(fmt.Sprint("naive-", i)), newVersion(time.Now()))
			peak = max(peak, peakHeap(func() { putItems(b, be.c, items) }))
			be.clear(b, items)
		}
		units := be.measure(b, true, func(c Client) {
			putItems(b, c.(*dynamodb.Client), be.chunkItems(b, sKey("naive"), newVersion(time.Now())))
		})
		be.report(b, b.N*chunks, chunks, units, minWrite, peak)
	})
}

func BenchmarkGet64MiB(b *testing.B) {
	be := newBenchEnv(b)
	ctx := context.Background()
	key := sKey("bench-get")
	info, err := be.st.Put(ctx, key, be.data)
	if err != nil {
		b.Fatal(err)
	}
	items := be.chunkItems(b, key, info.Version)
	minRead := minUnits(b, items, true)

	b.Run("store", func(b *testing.B) {
		b.SetBytes(benchSize)
		b.ReportAllocs()
		var requests int
		var peak uint64
		get := func(st *Store) {
			got, _, err := st.Get(ctx, key)
			if err != nil || len(got) != benchSize {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			be.h.reset()
			peak = max(peak, peakHeap(func() { get(be.st) }))
			requests += be.h.total()
		}
		units := be.measure(b, false, func(c Client) { get(newStore(b, c, be.e.parents, be.e.chunks)) })
		be.report(b, requests, 1+(info.Chunks+39)/40, units, minRead, peak)
	})

	getItems := func(b *testing.B, c *dynamodb.Client) {
		var buf bytes.Buffer
		for _, it := range items {
			out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &be.e.chunks,
				Key: map[string]types.AttributeValue{"ChunkKey": it["ChunkKey"]}})
			if err != nil || out.Item == nil {
				b.Fatal(err)
			}
			buf.Write(out.Item["Data"].(*types.AttributeValueMemberB).Value)
		}
	}
	b.Run("naive", func(b *testing.B) {
		b.SetBytes(benchSize)
		b.ReportAllocs()
		var peak uint64
		for b.Loop() {
			peak = max(peak, peakHeap(func() { getItems(b, be.c) }))
		}
		units := be.measure(b, false, func(c Client) { getItems(b, c.(*dynamodb.Client)) })
		be.report(b, b.N*info.Chunks, info.Chunks, units, minRead, peak)
	})
}
