package scatter_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

func newProxy(t *testing.T, target string, cfg faultproxy.Config) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestPageUnderFaults: with throttling, 500s, resets, truncated bodies and
// latency on Query, a page walk that retries a failed call with the same
// cursor still yields exactly the full result.
func TestPageUnderFaults(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(11, 11))
		ds := newDataset(t, s, direct, r, 'B', 8, 30)
		p := newProxy(t, s.Endpoint, faultproxy.Config{
			ThrottleRate: 0.08, ErrorRate: 0.04, ErrorAfterRate: 0.04,
			ResetBeforeRate: 0.04, ResetAfterRate: 0.04, TruncateRate: 0.04,
			Latency: time.Millisecond, Jitter: 3 * time.Millisecond,
			Ops: []string{"Query"}, Seed: 1,
		})
		c, _ := testClient(p.URL(), fastRetries(2))
		sc := newScatter(t, c, layout(ds.table, 'B', shard.Hash(ds.n)))
		for _, desc := range []bool{false, true} {
			q := ds.read(shard.Hash(ds.n))
			q.o = scatter.Options{Descending: desc, PageSize: int32(1 + r.IntN(5))}
			want := ids(reference(t, direct, q, suffixRange(ds.n)))
			var got []string
			var cur scatter.Cursor
			failed := 0
			for calls := 0; ; calls++ {
				if calls > 2000 {
					t.Fatal("too many calls")
				}
				items, next, err := sc.Page(context.Background(), q.base, 1+r.IntN(12), cur, q.opt)
				if err != nil {
					var se *scatter.ShardError
					if !errors.As(err, &se) {
						t.Fatalf("got %v, want a *ShardError", err)
					}
					failed++
					continue // the same cursor again
				}
				got = append(got, ids(items)...)
				if next == "" {
					break
				}
				cur = next
			}
			if !slices.Equal(got, want) {
				t.Errorf("desc=%v: (-got +want)\n%s", desc, cmp.Diff(got, want))
			}
			st := p.Stats().Total
			injected := st.Throttled + st.Errors + st.ErrorsAfter + st.ResetsBefore + st.ResetsAfter + st.Truncated
			if injected == 0 {
				t.Errorf("no fault injected: %+v", st)
			}
			t.Logf("desc=%v: %d faults injected, %d Page calls failed and were repeated", desc, injected, failed)
		}
	})
}

// TestShardFailure: one shard failing fails the call with a *ShardError that
// names it and unwraps to the SDK's error; under Options.Partial the healthy
// shards' items come back with a *PartialError.
func TestShardFailure(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(13, 13))
		ds := newDataset(t, s, direct, r, 'N', 6, 20)
		const bad = 3
		p := newProxy(t, s.Endpoint, faultproxy.Config{
			ErrorRate: 1, Ops: []string{"Query"}, Keys: []string{shard.Key(ds.base, bad)},
		})
		c, _ := testClient(p.URL(), fastRetries(1))
		q := ds.read(shard.Hash(ds.n))
		checkShardErr := func(t *testing.T, err error) {
			t.Helper()
			var se *scatter.ShardError
			if !errors.As(err, &se) || se.Suffix != bad || se.Key != shard.Key(ds.base, bad) {
				t.Fatalf("got %v, want a *ShardError for suffix %d", err, bad)
			}
			var api smithy.APIError
			if !errors.As(err, &api) {
				t.Errorf("got %v, want it to unwrap to a smithy.APIError", err)
			}
		}

		t.Run("default", func(t *testing.T) {
			sc := newScatter(t, c, q.l)
			var last error
			for _, err := range sc.All(context.Background(), q.base) {
				last = err
			}
			checkShardErr(t, last)
			_, _, err := sc.Page(context.Background(), q.base, 5, "")
			checkShardErr(t, err)
			_, err = sc.Count(context.Background(), q.base)
			checkShardErr(t, err)
		})

		t.Run("partial", func(t *testing.T) {
			sc := newScatter(t, c, q.l, func(o *scatter.Options) { o.Partial = true })
			healthy := slices.DeleteFunc(suffixRange(ds.n), func(s int) bool { return s == bad })
			want := ids(reference(t, direct, q, healthy))
			checkPartial := func(t *testing.T, err error) {
				t.Helper()
				var pe *scatter.PartialError
				if !errors.As(err, &pe) || len(pe.Errs) != 1 {
					t.Fatalf("got %v, want a *PartialError with one shard", err)
				}
				checkShardErr(t, err)
			}
			var got []string
			var last error
			for it, err := range sc.All(context.Background(), q.base) {
				if err != nil {
					last = err
					continue
				}
				got = append(got, ids([]scatter.Item{it})...)
			}
			checkPartial(t, last)
			if !slices.Equal(got, want) {
				t.Errorf("All: (-got +want)\n%s", cmp.Diff(got, want))
			}
			items, cur, err := sc.Page(context.Background(), q.base, 1000, "")
			checkPartial(t, err)
			if got := ids(items); !slices.Equal(got, want) {
				t.Errorf("Page: (-got +want)\n%s", cmp.Diff(got, want))
			}
			if cur == "" {
				t.Error("Page: got the end cursor, want one that retries the failed shard")
			}
			// Once the shard recovers, the cursor reads exactly what was missed.
			if err := p.Set(faultproxy.Config{}); err != nil {
				t.Fatal(err)
			}
			rest, end, err := sc.Page(context.Background(), q.base, 1000, cur)
			if err != nil || end != "" {
				t.Fatalf("resume: got %v, %q, want no error and the end", err, end)
			}
			wantRest := ids(reference(t, direct, q, []int{bad}))
			if got := ids(rest); !slices.Equal(got, wantRest) {
				t.Errorf("resume: (-got +want)\n%s", cmp.Diff(got, wantRest))
			}
			if err := p.Set(faultproxy.Config{ErrorRate: 1, Ops: []string{"Query"}, Keys: []string{shard.Key(ds.base, bad)}}); err != nil {
				t.Fatal(err)
			}
			n, err := sc.Count(context.Background(), q.base)
			checkPartial(t, err)
			if n != int64(len(want)) {
				t.Errorf("Count: got %d, want %d", n, len(want))
			}
		})
	})
}

// TestNoGoroutineLeaks: after break, cancel, error and a satisfied limit,
// every goroutine the call started has ended.
func TestNoGoroutineLeaks(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(17, 17))
		ds := newDataset(t, s, direct, r, 'N', 40, 6)
		q := ds.read(shard.Hash(ds.n))
		q.o.PageSize = 2
		cases := []struct {
			name string
			cfg  faultproxy.Config
			opts func(*scatter.Options)
			run  func(t *testing.T, sc *scatter.Scatter)
		}{
			{"break", faultproxy.Config{Latency: 5 * time.Millisecond}, nil, func(t *testing.T, sc *scatter.Scatter) {
				for _, err := range sc.All(context.Background(), q.base, q.opt) {
					if err != nil {
						t.Fatal(err)
					}
					break
				}
			}},
			{"cancel", faultproxy.Config{Latency: 5 * time.Millisecond}, nil, func(t *testing.T, sc *scatter.Scatter) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				n := 0
				var last error
				for _, err := range sc.All(ctx, q.base, q.opt) {
					n++
					last = err
					cancel()
				}
				if !errors.Is(last, context.Canceled) || n != 2 {
					t.Errorf("got %d pairs ending in %v, want 2 ending in context.Canceled", n, last)
				}
			}},
			{"error", faultproxy.Config{ErrorRate: 1, Keys: []string{shard.Key(ds.base, 7)}, Latency: 2 * time.Millisecond},
				nil, func(t *testing.T, sc *scatter.Scatter) {
					var last error
					for _, err := range sc.All(context.Background(), q.base, q.opt) {
						last = err
					}
					var se *scatter.ShardError
					if !errors.As(last, &se) {
						t.Errorf("got %v, want a *ShardError", last)
					}
					if _, err := sc.Count(context.Background(), q.base, q.opt); !errors.As(err, &se) {
						t.Errorf("Count: got %v, want a *ShardError", err)
					}
				}},
			{"limit", faultproxy.Config{Latency: 5 * time.Millisecond}, nil, func(t *testing.T, sc *scatter.Scatter) {
				if _, _, err := sc.Page(context.Background(), q.base, 3, "", q.opt); err != nil {
					t.Fatal(err)
				}
			}},
			{"partial", faultproxy.Config{ErrorRate: 1, Keys: []string{shard.Key(ds.base, 7)}},
				func(o *scatter.Options) { o.Partial = true }, func(t *testing.T, sc *scatter.Scatter) {
					var last error
					for _, err := range sc.All(context.Background(), q.base, q.opt) {
						last = err
					}
					var pe *scatter.PartialError
					if !errors.As(last, &pe) {
						t.Errorf("got %v, want a *PartialError", last)
					}
				}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ignore := goleak.IgnoreCurrent()
				p, err := faultproxy.New(s.Endpoint, tc.cfg)
				if err != nil {
					t.Fatal(err)
				}
				c, tr := testClient(p.URL(), fastRetries(1))
				var opts []func(*scatter.Options)
				if tc.opts != nil {
					opts = append(opts, tc.opts)
				}
				tc.run(t, newScatter(t, c, q.l, opts...))
				tr.CloseIdleConnections()
				p.Close()
				goleak.VerifyNone(t, ignore)
			})
		}
	})
}

// TestFilterRemovesEverything: a filter that matches nothing across several
// 1 MB pages per shard ends; with MaxShardPages each empty Page advances the
// cursor until the end, reading every page exactly once.
func TestFilterRemovesEverything(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		table := s.Table(t, "pk:S", "sk:N")
		const shards, perShard = 2, 10
		pad := strings.Repeat("x", 300<<10)
		var items []map[string]types.AttributeValue
		for suffix := 1; suffix <= shards; suffix++ {
			for i := range perShard {
				items = append(items, map[string]types.AttributeValue{
					"pk": sv(shard.Key("day", suffix)), "sk": nv(fmt.Sprint(i)), "v": nv("1"), "pad": sv(pad),
				})
			}
		}
		for i := 0; i < len(items); i += 5 {
			putAll(t, c, table, items[i:min(i+5, len(items))]) // ≤ 16 MB per request
		}
		for _, pageSize := range []int32{0, 3} {
			t.Run(fmt.Sprint("PageSize=", pageSize), func(t *testing.T) {
				q := read{l: layout(table, 'N', shard.Random(shards)), base: "day", o: scatter.Options{
					Filter: "#v > :x", Names: map[string]string{"#v": "v"}, Values: map[string]types.AttributeValue{":x": nv("1")},
					PageSize: pageSize}}
				// The model: how many pages the server itself cuts each shard into.
				var total, most int64
				for suffix := 1; suffix <= shards; suffix++ {
					in := &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :p"),
						FilterExpression: aws.String(q.o.Filter), ExpressionAttributeNames: q.o.Names,
						ExpressionAttributeValues: map[string]types.AttributeValue{":p": sv(shard.Key("day", suffix)), ":x": nv("1")}}
					if pageSize > 0 {
						in.Limit = aws.Int32(pageSize)
					}
					var n int64
					for pg := dynamodb.NewQueryPaginator(c, in); pg.HasMorePages(); n++ {
						if _, err := pg.NextPage(context.Background()); err != nil {
							t.Fatal(err)
						}
					}
					total += n
					most = max(most, n)
				}
				if most < 2 {
					// DynamoDB Local ignores the 1 MB page limit when a filter is
					// present (it scans the whole collection); PageSize=3 covers it.
					t.Logf("%s returns each shard in one page; nothing to page through", s.Kind)
					if pageSize > 0 || s.Kind != "ddblocal" {
						t.Errorf("got %d pages per shard, want several", most)
					}
					return
				}

				sc := newScatter(t, c, q.l)
				if got := collect(t, sc.All(context.Background(), q.base, q.opt)); len(got) != 0 {
					t.Errorf("All: got %d items, want none", len(got))
				}
				if st := sc.Stats(); st.Queries != total || st.Scanned != shards*perShard || st.Items != 0 {
					t.Errorf("All: got %+v, want %d queries scanning %d items", st, total, shards*perShard)
				}
				if n, err := sc.Count(context.Background(), q.base, q.opt); n != 0 || err != nil {
					t.Errorf("Count: got %d, %v, want 0", n, err)
				}

				bounded := newScatter(t, c, q.l, func(o *scatter.Options) { o.MaxShardPages = 1 })
				var cur scatter.Cursor
				seen := map[scatter.Cursor]bool{}
				var calls int64
				for {
					calls++
					items, next, err := bounded.Page(context.Background(), q.base, 10, cur, q.opt)
					if err != nil {
						t.Fatal(err)
					}
					if len(items) != 0 {
						t.Fatalf("call %d: got %d items, want none", calls, len(items))
					}
					if next == "" {
						break
					}
					if seen[next] {
						t.Fatalf("call %d: cursor did not advance", calls)
					}
					seen[next] = true
					cur = next
					if calls > 100 {
						t.Fatal("Page never ends")
					}
				}
				if st := bounded.Stats(); calls != most || st.Queries != total || st.Scanned != shards*perShard {
					t.Errorf("got %d calls and %+v, want %d calls, %d queries, %d items scanned", calls, st, most, total, shards*perShard)
				}
			})
		}
	})
}

// TestIndexQuery: on a global secondary index whose sort key repeats within
// a shard, with a projection that leaves out every key, the merge keeps each
// shard's order and resuming between equal sort keys loses nothing.
func TestIndexQuery(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		table := indexTable(t, s)
		r := rand.New(rand.NewPCG(19, 19))
		const n = 5
		var items []map[string]types.AttributeValue
		for i := range 120 {
			items = append(items, map[string]types.AttributeValue{
				"id": sv(fmt.Sprintf("i%05d", i)), "day": sv(shard.Key("d", 1+r.IntN(n))),
				"sk": nv(fmt.Sprint(r.IntN(8))), "v": nv(fmt.Sprint(r.IntN(100))),
			})
		}
		putAll(t, c, table, items)
		sc := newScatter(t, c, indexLayout(table, shard.Hash(n)))
		for _, desc := range []bool{false, true} {
			q := read{l: indexLayout(table, shard.Hash(n)), base: "d",
				o: scatter.Options{Descending: desc, Projection: "#v", Names: map[string]string{"#v": "v"}}}
			want := ids(reference(t, c, q, suffixRange(n)))
			if got := ids(collect(t, sc.All(context.Background(), q.base, q.opt))); !slices.Equal(got, want) {
				t.Errorf("desc=%v All: (-got +want)\n%s", desc, cmp.Diff(got, want))
			}
			for _, limit := range []int{1, 7} {
				if got := ids(pages(t, sc, q, limit)); !slices.Equal(got, want) {
					t.Errorf("desc=%v Page(limit %d): (-got +want)\n%s", desc, limit, cmp.Diff(got, want))
				}
			}
		}
	})
}

// TestCursorRejected: cursors for another read (another layout, base,
// condition, filter, direction or suffix set), garbled, truncated,
// tampered or wrongly signed cursors are rejected with a *CursorError
// before any request; a cursor survives changes that keep the result the
// same.
func TestCursorRejected(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(23, 23))
		ds := newDataset(t, s, direct, r, 'S', 4, 20)
		p := newProxy(t, s.Endpoint, faultproxy.Config{})
		c, _ := testClient(p.URL())
		k1, k2 := []byte("k1: sixteen bytes or more"), []byte("k2: sixteen bytes or more")
		q := ds.read(shard.Hash(ds.n))
		q.o = scatter.Options{KeyCondition: "#sk > :lo", Filter: "#v < :x", Names: map[string]string{"#sk": "sk", "#v": "v"},
			Values: map[string]types.AttributeValue{":lo": sv("0"), ":x": nv("90")}}
		// page calls Page on a Scatter of q's layout that signs with key.
		page := func(t *testing.T, key []byte, q read, cur scatter.Cursor) (scatter.Cursor, error) {
			t.Helper()
			sc := newScatter(t, c, q.l, func(o *scatter.Options) { o.CursorKey = key })
			_, next, err := sc.Page(context.Background(), q.base, 3, cur, q.opt)
			return next, err
		}
		cur, err := page(t, nil, q, "")
		if err != nil || cur == "" {
			t.Fatalf("got %q, %v, want a cursor", cur, err)
		}
		scur, err := page(t, k1, q, "")
		if err != nil || scur == "" {
			t.Fatalf("got %q, %v, want a cursor", scur, err)
		}
		p.ResetStats()

		expect := func(t *testing.T, key []byte, q read, c scatter.Cursor, reason scatter.CursorReason) {
			t.Helper()
			_, err := page(t, key, q, c)
			var ce *scatter.CursorError
			if !errors.Is(err, scatter.ErrInvalidCursor) || !errors.Is(err, scatter.ErrInvalid) || !errors.As(err, &ce) {
				t.Fatalf("cursor %q: got %v, want ErrInvalidCursor", c, err)
			}
			if reason != 0 && ce.Reason != reason {
				t.Errorf("cursor %q: got reason %v, want %v", c, ce.Reason, reason)
			}
		}
		foreign := []struct {
			name string
			edit func(*read)
		}{
			{"table", func(q *read) { q.l.Table += "x" }},
			{"index", func(q *read) { q.l.Index, q.l.TableKey, q.l.Unchecked = "gsi", []string{"pk", "sk"}, true }},
			{"base", func(q *read) { q.base = "2014-07-10" }},
			{"separator", func(q *read) { q.l.Codec = shard.Codec{Sep: "#"} }},
			{"sort condition", func(q *read) { q.o.KeyCondition = "#sk >= :lo" }},
			{"sort value", func(q *read) { q.o.Values = map[string]types.AttributeValue{":lo": sv("1"), ":x": nv("90")} }},
			{"filter", func(q *read) { q.o.Filter = "#v <= :x" }},
			{"filter value", func(q *read) { q.o.Values = map[string]types.AttributeValue{":lo": sv("0"), ":x": nv("91")} }},
			{"direction", func(q *read) { q.o.Descending = true }},
			{"strategy", func(q *read) { q.l.Strategy = shard.Random(ds.n) }},
			{"suffix list", func(q *read) { q.o.Suffixes = []int{1, 2, 3} }},
			{"sort key", func(q *read) { q.l.SortKey, q.o.Names = "v", map[string]string{"#sk": "v", "#v": "v"} }},
		}
		for _, f := range foreign {
			t.Run("foreign/"+f.name, func(t *testing.T) {
				q2 := q
				f.edit(&q2)
				expect(t, nil, q2, cur, scatter.CursorForeign)
				expect(t, k1, q2, scur, scatter.CursorForeign)
			})
		}
		t.Run("garbage", func(t *testing.T) {
			for _, g := range []scatter.Cursor{"!", "....", "AAAA", "AQ", "AQA", scatter.Cursor(strings.Repeat("A", 200)), cur + "=", cur + "A", " " + cur} {
				expect(t, nil, q, g, 0)
			}
		})
		t.Run("truncated", func(t *testing.T) {
			for i := 1; i < len(cur); i++ {
				expect(t, nil, q, cur[:i], 0)
			}
		})
		t.Run("tampered", func(t *testing.T) {
			raw, err := base64.RawURLEncoding.DecodeString(string(scur))
			if err != nil {
				t.Fatal(err)
			}
			for i := range raw {
				for _, bit := range []byte{0x01, 0x80} {
					b := slices.Clone(raw)
					b[i] ^= bit
					expect(t, k1, q, scatter.Cursor(base64.RawURLEncoding.EncodeToString(b)), 0)
				}
			}
		})
		t.Run("signature", func(t *testing.T) {
			expect(t, k1, q, cur, scatter.CursorSignature)
			expect(t, nil, q, scur, scatter.CursorSignature)
			expect(t, k2, q, scur, scatter.CursorSignature)
		})
		if st := p.Stats().Total; st.Requests != 0 {
			t.Errorf("rejected cursors caused %d requests, want 0", st.Requests)
		}
		t.Run("still valid", func(t *testing.T) {
			for _, edit := range []func(*read){
				func(q *read) { q.o.Projection = "id, sk" },
				func(q *read) { q.o.PageSize = 2 },
				func(q *read) { q.o.ConsistentRead = true },
				func(q *read) { q.o.Suffixes = []int{4, 3, 2, 1} },
				func(q *read) { q.l.Unchecked = true },
				// A base's N is its record's, not the layout's.
				func(q *read) { q.l.Strategy = shard.Hash(ds.n + 1) },
			} {
				q2 := q
				edit(&q2)
				if _, err := page(t, nil, q2, cur); err != nil {
					t.Errorf("got %v, want the cursor accepted", err)
				}
			}
		})
	})
}
