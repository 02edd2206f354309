package scatter

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/shard"
)

const (
	benchShards   = 200
	benchPerShard = 5000 // 1,000,000 items in all
	benchPage     = 1000 // items per page, about 1 MB of 1 KB items
)

// benchData builds each shard's items in that shard's sort order, as
// DynamoDB would return them, split into pages. Items are allocated in
// that order, as the SDK allocates a response's items, so memory layout
// follows reading order as it would in a real run.
func benchData(kind byte) [][][]map[string]types.AttributeValue {
	r := rand.New(rand.NewPCG(1, uint64(kind)))
	shards := make([][][]map[string]types.AttributeValue, benchShards)
	for s := range shards {
		sks := make([]types.AttributeValue, benchPerShard)
		for i := range sks {
			if kind == 'S' {
				sks[i] = &types.AttributeValueMemberS{Value: fmt.Sprintf("2014-07-09T%02d:%02d:%02d.%03dZ#%06d",
					r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000), r.IntN(1e6))}
			} else {
				sks[i] = &types.AttributeValueMemberN{Value: fmt.Sprintf("%d.%d", r.IntN(1e9), r.IntN(1e6))}
			}
		}
		slices.SortFunc(sks, func(a, b types.AttributeValue) int {
			c, _ := keyorder.Compare(a, b)
			return c
		})
		pk := shard.Key("2014-07-09", s+1)
		items := make([]map[string]types.AttributeValue, benchPerShard)
		for i, sk := range sks {
			// A fresh copy of the key value, its bytes included, next to its
			// map, as the SDK makes when it decodes a page: the values were
			// generated before sorting, so reusing their bytes would scatter
			// them over memory in an order no response has.
			switch v := sk.(type) {
			case *types.AttributeValueMemberS:
				sk = &types.AttributeValueMemberS{Value: strings.Clone(v.Value)}
			case *types.AttributeValueMemberN:
				sk = &types.AttributeValueMemberN{Value: strings.Clone(v.Value)}
			}
			items[i] = map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: strings.Clone(pk)}, "sk": sk}
		}
		for len(items) > 0 {
			n := min(benchPage, len(items))
			shards[s] = append(shards[s], items[:n])
			items = items[n:]
		}
	}
	return shards
}

// mergeAll runs the library's merge over preloaded pages: the run is given
// every shard's pages as if they had just arrived, so no request is made.
func mergeAll(b *testing.B, p *plan, data [][][]map[string]types.AttributeValue) int {
	s := &Scatter{} // no client: the run below sends nothing
	r := s.newRun(context.Background(), p, resume{}, -1, 0)
	defer r.close()
	r.started = true // nothing to launch: pages are fed below
	next := make([]int, len(data))
	feed := func(sh *shardState) {
		pages := data[sh.ord]
		i := next[sh.ord]
		if i >= len(pages) {
			return
		}
		next[sh.ord]++
		// The request goroutine's share, counted here: the page copied into
		// the shard's spare space and its keys' prefixes parsed.
		buf := sh.spare
		sh.spare = page{}
		items := append(buf.items[:0], pages[i]...)
		words, kind, err := prefixes(buf.words, items, nil, "sk")
		if err != nil {
			b.Fatal(err)
		}
		res := &result{ord: sh.ord, items: items, words: words, kind: kind}
		if i+1 < len(pages) {
			res.lek = pages[i][len(pages[i])-1] // stands in for LastEvaluatedKey
		}
		sh.pending = res
	}
	for i := range r.shards {
		feed(&r.shards[i])
	}
	// Spend every shard's page budget so that the run never sends a request;
	// the loop below feeds each next page before the merge asks for it.
	r.maxPgs = 1
	for i := range r.shards {
		r.shards[i].pages = 1
	}
	n := 0
	o := r.m.(*ordered)
	for {
		if o.dirty {
			if sh := &r.shards[o.tree[0]]; sh.i >= len(sh.items) && sh.pending == nil && !sh.done {
				feed(sh)
			}
		}
		it, ok, err := r.next()
		if err != nil {
			b.Fatal(err)
		}
		if !ok {
			return n
		}
		_ = it
		n++
	}
}

func benchPlan(b *testing.B) *plan {
	p, err := newPlan(shard.Layout{Table: "t", PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(benchShards)}, "2014-07-09", Options{})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// perItem reports per-item wall time, CPU time of the whole process (which
// on a shared machine is the fairer figure) and allocations.
func perItem(b *testing.B, items int, f func()) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		f()
	}
	b.StopTimer()
	c1 := cpuTime()
	runtime.ReadMemStats(&m1)
	total := float64(b.N) * float64(items)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/item")
	b.ReportMetric(float64((c1-c0).Nanoseconds())/total, "cpu-ns/item")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/total, "allocs/item")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkMerge: the library's heap merge against collecting every item
// and sorting, 1,000,000 items over 200 shards, sort keys already
// unmarshalled by the SDK (that cost is BenchmarkSDKUnmarshal's).
func BenchmarkMerge(b *testing.B) {
	for _, kind := range []byte{'S', 'N'} {
		data := benchData(kind)
		p := benchPlan(b)
		total := benchShards * benchPerShard
		b.Run(fmt.Sprintf("%c/heap", kind), func(b *testing.B) {
			perItem(b, total, func() {
				if n := mergeAll(b, p, data); n != total {
					b.Fatalf("merged %d items, want %d", n, total)
				}
			})
		})
		// The same merge over 20 items per shard, which stay in cache: what
		// the merge costs apart from first touching each item in memory.
		b.Run(fmt.Sprintf("%c/heap-in-cache", kind), func(b *testing.B) {
			small := make([][][]map[string]types.AttributeValue, len(data))
			for s := range data {
				small[s] = [][]map[string]types.AttributeValue{data[s][0][:20]}
			}
			perItem(b, benchShards*20, func() {
				if n := mergeAll(b, p, small); n != benchShards*20 {
					b.Fatalf("merged %d items, want %d", n, benchShards*20)
				}
			})
		})
		b.Run(fmt.Sprintf("%c/heap-desc", kind), func(b *testing.B) {
			pd := *p
			pd.desc = true
			rev := make([][][]map[string]types.AttributeValue, len(data))
			for s, pages := range data {
				var all []map[string]types.AttributeValue
				for _, pg := range pages {
					all = append(all, pg...)
				}
				slices.Reverse(all)
				for len(all) > 0 {
					n := min(benchPage, len(all))
					rev[s] = append(rev[s], all[:n])
					all = all[n:]
				}
			}
			perItem(b, total, func() {
				if n := mergeAll(b, &pd, rev); n != total {
					b.Fatalf("merged %d items, want %d", n, total)
				}
			})
		})
		b.Run(fmt.Sprintf("%c/collect-and-sort", kind), func(b *testing.B) {
			type keyed struct {
				key    keyorder.Key
				suffix int
				item   Item
			}
			perItem(b, total, func() {
				all := make([]keyed, 0, total)
				for s, pages := range data {
					for _, pg := range pages {
						for _, it := range pg {
							k, err := keyorder.Parse(it["sk"])
							if err != nil {
								b.Fatal(err)
							}
							all = append(all, keyed{k, s + 1, Item{Suffix: s + 1, Attrs: it}})
						}
					}
				}
				slices.SortStableFunc(all, func(a, b keyed) int {
					if c := a.key.Compare(&b.key); c != 0 {
						return c
					}
					return a.suffix - b.suffix
				})
			})
		})
	}
}

// BenchmarkSDKUnmarshal: what the SDK itself costs per item, reported apart
// from the merge: deserializing a Query response of 1,000 items (canned,
// served locally, so no database time is included), and decoding one item
// into a struct with attributevalue.
func BenchmarkSDKUnmarshal(b *testing.B) {
	data := benchData('S')
	page := data[0][0]
	body, err := json.Marshal(map[string]any{"Count": len(page), "ScannedCount": len(page), "Items": jsonItems(page)})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write(body)
	}))
	defer srv.Close()
	c := localddb.NewClient(srv.URL)
	in := &dynamodb.QueryInput{TableName: aws.String("t"), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "x"}}}
	b.Run("Query-response", func(b *testing.B) {
		perItem(b, len(page), func() {
			out, err := c.Query(context.Background(), in)
			if err != nil || len(out.Items) != len(page) {
				b.Fatalf("got %v items, %v", len(out.Items), err)
			}
		})
	})
	b.Run("attributevalue.UnmarshalMap", func(b *testing.B) {
		var v struct {
			PK string `dynamodbav:"pk"`
			SK string `dynamodbav:"sk"`
		}
		perItem(b, 1, func() {
			if err := attributevalue.UnmarshalMap(page[0], &v); err != nil {
				b.Fatal(err)
			}
		})
	})
}

func jsonItems(items []map[string]types.AttributeValue) []map[string]map[string]string {
	out := make([]map[string]map[string]string, len(items))
	for i, it := range items {
		m := map[string]map[string]string{}
		for k, v := range it {
			switch v := v.(type) {
			case *types.AttributeValueMemberS:
				m[k] = map[string]string{"S": v.Value}
			case *types.AttributeValueMemberN:
				m[k] = map[string]string{"N": v.Value}
			}
		}
		out[i] = m
	}
	return out
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
