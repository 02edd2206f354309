package batch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

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
