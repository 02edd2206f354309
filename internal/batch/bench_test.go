package batch

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
)

// BenchmarkPack measures validation, size computation, duplicate detection
// and packing per write, with a sender that answers at once (no I/O). The
// naive baseline is the hand-written loop the engine replaces: chunks of 25
// with no validation, no byte limit and no duplicate check.
func BenchmarkPack(b *testing.B) {
	for _, size := range []int{100, 4 << 10, 100 << 10} {
		const perCall = 1000
		ws := make([]Write, perCall)
		for i := range ws {
			ws[i] = Write{Table: "t", Put: item{
				"pk":   s(fmt.Sprintf("user#%06d", i)),
				"sk":   n(fmt.Sprint(i * 7)),
				"tags": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
				"body": s(strings.Repeat("x", size)),
			}}
		}
		opts := testOpts(func(o *Options) { o.KeyAttributes = map[string][]string{"t": {"pk", "sk"}} })
		noop := func(context.Context, []*job) outcome { return outcome{} }
		b.Run(fmt.Sprintf("engine/item=%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := writeAll(context.Background(), noop, ws, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perCall), "ns/write")
		})
		b.Run(fmt.Sprintf("naive/item=%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for chunk := range slices.Chunk(ws, MaxWritesPerRequest) {
					in := &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{}}
					for _, w := range chunk {
						in.RequestItems[w.Table] = append(in.RequestItems[w.Table], types.WriteRequest{PutRequest: &types.PutRequest{Item: w.Put}})
					}
					_ = in
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perCall), "ns/write")
		})
	}
}

// BenchmarkPacing runs scenario 5 of the bench (32 keys × 1000 writes, in
// round-robin order, each key admitted at 100 units/s with 100 ms of
// burst) against an in-process model of per-key capacity that answers
// after 8 ms: a token bucket per key, admitting an entry while its
// balance is positive, as dynashardtest/faultproxy does. With no server
// and no proxy to share the CPU with, it measures the pacing alone:
// "limit" is the fraction of the model's shortest load time reached, and
// "unprocessed/item" the entries returned per write done. One op takes
// about 10 s; run it with -benchtime 1x.
func BenchmarkPacing(b *testing.B) {
	const keys, per, rate, burst = 32, 1000, 100.0, 10.0
	for b.Loop() {
		type bucket struct {
			bal float64
			at  time.Time
		}
		var mu sync.Mutex
		buckets := map[string]*bucket{}
		unprocessed := 0
		start := time.Now()
		send := func(_ context.Context, batch []*job) outcome {
			time.Sleep(8 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			var left []*job
			for _, j := range batch {
				pk := j.write.Put["pk"].(*types.AttributeValueMemberS).Value
				k := buckets[pk]
				if k == nil {
					k = &bucket{bal: burst, at: start}
					buckets[pk] = k
				}
				k.bal = min(burst, k.bal+now.Sub(k.at).Seconds()*rate)
				k.at = now
				if k.bal > 0 {
					k.bal--
				} else {
					left = append(left, j)
					unprocessed++
				}
			}
			return outcome{left: left}
		}
		seq := func(yield func(Write) bool) {
			for i := range per {
				for k := range keys {
					if !yield(Write{Table: "t", Put: item{"pk": s(fmt.Sprint("U", k)), "sk": n(fmt.Sprint(i))}}) {
						return
					}
				}
			}
		}
		st, err := writeSeq(context.Background(), send, seq, testOpts(func(o *Options) {
			o.KeyAttributes = map[string][]string{"t": {"pk", "sk"}}
			o.MaxWaiting = keys * per
		}))
		if err != nil {
			b.Fatal(err)
		}
		ideal := per/rate - burst/rate
		b.ReportMetric(ideal/time.Since(start).Seconds(), "limit")
		b.ReportMetric(float64(unprocessed)/float64(st.Done), "unprocessed/item")
		b.ReportMetric(float64(st.Requests), "requests")
	}
}
