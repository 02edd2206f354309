package scatter_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// inflight wraps a real SDK client (it only counts; the server behind it
// answers): for every Query it records how many Query calls were in
// progress when it started, itself included, and whether some Query had
// already come back throttled.
type inflight struct {
	*dynamodb.Client
	mu        sync.Mutex
	now       int
	starts    []start
	throttled bool // a Query has come back having met throttling
}

type start struct {
	inflight      int
	afterThrottle bool
}

func (w *inflight) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	w.mu.Lock()
	w.now++
	w.starts = append(w.starts, start{inflight: w.now, afterThrottle: w.throttled})
	w.mu.Unlock()
	out, err := w.Client.Query(ctx, in, optFns...)
	w.mu.Lock()
	w.now--
	w.throttled = w.throttled || metThrottle(out, err)
	w.mu.Unlock()
	return out, err
}

// metThrottle reports whether a Query failed with the proxy's throttling
// error or succeeded after the SDK retried one.
func metThrottle(out *dynamodb.QueryOutput, err error) bool {
	var pte *types.ProvisionedThroughputExceededException
	if errors.As(err, &pte) {
		return true
	}
	if out == nil {
		return false
	}
	attempts, _ := retry.GetAttemptResults(out.ResultMetadata)
	for _, a := range attempts.Results {
		if errors.As(a.Err, &pte) {
			return true
		}
	}
	return false
}

// peak returns the most Query calls in progress at the start of one of
// the starts that f selects (given its index), and how many it selected.
func (w *inflight) peak(f func(i int, s start) bool) (peak, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, s := range w.starts {
		if f(i, s) {
			peak, n = max(peak, s.inflight), n+1
		}
	}
	return peak, n
}

func (w *inflight) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.starts, w.throttled = nil, false
}

// readAll runs All and returns the ids of its items, failing t on an
// error.
func readAll(t *testing.T, sc *scatter.Scatter, q read) []string {
	t.Helper()
	var got []scatter.Item
	for it, err := range sc.All(context.Background(), q.base, q.opt) {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		got = append(got, it)
	}
	return ids(got)
}

// TestThrottleBacksOff: with a third of the Query attempts throttled, All
// halves the requests it keeps in flight (once the requests sent before
// the first throttle have come back, fewer than MaxConcurrency are ever in
// flight), reports it in Stats, and still returns every item exactly once,
// in order. The next call starts at the limit learned; unthrottled calls
// then grow it back until calls start at MaxConcurrency again.
func TestThrottleBacksOff(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(31, 31))
		ds := newDataset(t, s, direct, r, 'S', 64, 12)
		p := newProxy(t, s.Endpoint, faultproxy.Config{
			ThrottleRate: 0.3, Latency: 2 * time.Millisecond, Ops: []string{"Query"}, Seed: 3,
		})
		c, _ := testClient(p.URL(), fastRetries(12))
		w := &inflight{Client: c}
		q := ds.read(shard.Hash(ds.n))
		q.o.PageSize = 2 // several requests per shard
		sc := newScatter(t, w, q.l)
		const maxc = scatter.DefaultMaxConcurrency
		want := ids(reference(t, direct, q, suffixRange(ds.n)))

		if got := readAll(t, sc, q); !slices.Equal(got, want) {
			t.Fatalf("(-got +want)\n%s", cmp.Diff(got, want))
		}
		st := sc.Stats()
		if st.Throttled == 0 || st.Backoffs == 0 {
			t.Fatalf("got %+v, want throttled requests and backoffs", st)
		}
		if st.MinConcurrencyLimit < 1 || st.MinConcurrencyLimit >= maxc {
			t.Errorf("got MinConcurrencyLimit %d, want 1..%d", st.MinConcurrencyLimit, maxc-1)
		}
		if st.Throttled > st.Queries {
			t.Errorf("got %d throttled of %d queries", st.Throttled, st.Queries)
		}
		if ps := p.Stats().Total; ps.Throttled == 0 {
			t.Fatalf("the proxy throttled nothing: %+v", ps)
		}
		// Up to maxc requests may have been sent before the cut took
		// effect (their results were ahead of the throttled one); every
		// later one went out under the halved limit.
		peak, n := w.peak(func() func(int, start) bool {
			seen := 0
			return func(_ int, s start) bool {
				if !s.afterThrottle {
					return false
				}
				seen++
				return seen > maxc
			}
		}())
		if n == 0 {
			t.Fatal("no request started after the first throttle")
		}
		if peak >= maxc {
			t.Errorf("after the first throttle, %d requests were in flight at once; want fewer than MaxConcurrency %d", peak, maxc)
		}
		t.Logf("%s: %d queries, %d throttled, %d backoffs, lowest limit %d, learned %d; after the first throttle peak %d in flight over %d requests",
			s.Kind, st.Queries, st.Throttled, st.Backoffs, st.MinConcurrencyLimit, st.ConcurrencyLimit, peak, n)

		// Unthrottled now: each call starts at the limit learned and adds
		// at most 1/limit per answered request, so a call's requests in
		// flight stay within learned + requests/learned; calls grow it
		// back until they start at MaxConcurrency again.
		if err := p.Set(faultproxy.Config{Latency: 2 * time.Millisecond, Ops: []string{"Query"}}); err != nil {
			t.Fatal(err)
		}
		learned := st.ConcurrencyLimit
		for calls := 0; learned != 0; calls++ {
			if calls == 200 {
				t.Fatalf("limit still %d after %d unthrottled calls", learned, calls)
			}
			w.reset()
			before := sc.Stats().Queries
			if got := readAll(t, sc, q); !slices.Equal(got, want) {
				t.Fatalf("(-got +want)\n%s", cmp.Diff(got, want))
			}
			st := sc.Stats()
			requests := int(st.Queries - before)
			bound := min(maxc, learned+(requests+learned-1)/learned)
			if peak, _ := w.peak(func(int, start) bool { return true }); peak > bound {
				t.Fatalf("call starting at limit %d with %d requests had %d in flight, want at most %d", learned, requests, peak, bound)
			}
			if st.Backoffs != sc.Stats().Backoffs || st.ConcurrencyLimit != 0 && st.ConcurrencyLimit < learned {
				t.Fatalf("unthrottled call lowered the limit: %d → %+v", learned, st)
			}
			learned = st.ConcurrencyLimit
		}
	})
}

// TestUnthrottledKeepsMax: without throttling, the first round of a call
// has MaxConcurrency requests in flight at once, and Stats reports no
// backoff. The proxy holds every Query until MaxConcurrency are waiting,
// so the test does not depend on how fast requests start.
func TestUnthrottledKeepsMax(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(37, 37))
		ds := newDataset(t, s, direct, r, 'N', 48, 6)
		for _, maxc := range []int{scatter.DefaultMaxConcurrency, 5} {
			g := &gate{Client: direct, want: maxc, open: make(chan struct{})}
			q := ds.read(shard.Hash(ds.n))
			sc := newScatter(t, g, q.l, func(o *scatter.Options) { o.MaxConcurrency = maxc })
			done := make(chan []string)
			go func() {
				var got []scatter.Item
				for it, err := range sc.All(context.Background(), q.base) {
					if err != nil {
						t.Error(err)
						break
					}
					got = append(got, it)
				}
				done <- ids(got)
			}()
			select {
			case <-g.open:
			case <-time.After(30 * time.Second): // liveness only: stuck below maxc
				t.Fatalf("MaxConcurrency %d: only %d requests ever in flight at once", maxc, g.peak())
			}
			got := <-done
			if want := ids(reference(t, direct, q, suffixRange(ds.n))); !slices.Equal(got, want) {
				t.Fatalf("(-got +want)\n%s", cmp.Diff(got, want))
			}
			if p := g.peak(); p != maxc {
				t.Errorf("got %d in flight at most, want MaxConcurrency %d", p, maxc)
			}
			if st := sc.Stats(); st.Throttled != 0 || st.Backoffs != 0 || st.ConcurrencyLimit != 0 || st.MinConcurrencyLimit != 0 {
				t.Errorf("got %+v, want no throttling, no backoff, no learned limit", st)
			}
		}
	})
}

// gate wraps a real SDK client and holds each Query until want of them
// are in progress at once; then it lets every Query through.
type gate struct {
	*dynamodb.Client
	want int
	open chan struct{}

	mu     sync.Mutex
	now    int
	max    int
	opened bool
}

func (g *gate) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	g.mu.Lock()
	g.now++
	g.max = max(g.max, g.now)
	if g.now >= g.want && !g.opened {
		g.opened = true
		close(g.open)
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.now--
		g.mu.Unlock()
	}()
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Client.Query(ctx, in, optFns...)
}

func (g *gate) peak() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max
}

// TestThrottledPagesAndCancel: a Page walk under throttling returns every
// item exactly once and learns across pages; cancelling a throttled All
// ends it with ctx's error and leaves no goroutine behind.
func TestThrottledPagesAndCancel(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(41, 41))
		ds := newDataset(t, s, direct, r, 'S', 40, 10)
		q := ds.read(shard.Hash(ds.n))
		want := ids(reference(t, direct, q, suffixRange(ds.n)))

		t.Run("pages", func(t *testing.T) {
			p := newProxy(t, s.Endpoint, faultproxy.Config{ThrottleRate: 0.3, Ops: []string{"Query"}, Seed: 5})
			c, _ := testClient(p.URL(), fastRetries(12))
			sc := newScatter(t, c, q.l)
			var got []string
			var cur scatter.Cursor
			for calls := 0; ; calls++ {
				if calls > 500 {
					t.Fatal("too many calls")
				}
				items, next, err := sc.Page(context.Background(), q.base, 7, cur)
				if err != nil {
					t.Fatalf("Page: %v", err)
				}
				got = append(got, ids(items)...)
				if next == "" {
					break
				}
				cur = next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("(-got +want)\n%s", cmp.Diff(got, want))
			}
			if st := sc.Stats(); st.Throttled == 0 || st.Backoffs == 0 || st.MinConcurrencyLimit == 0 {
				t.Errorf("got %+v, want throttled requests, backoffs and a lowest limit", st)
			}
		})

		t.Run("cancel", func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			p, err := faultproxy.New(s.Endpoint, faultproxy.Config{
				ThrottleRate: 0.5, Latency: time.Millisecond, Ops: []string{"Query"}, Seed: 7,
			})
			if err != nil {
				t.Fatal(err)
			}
			c, tr := testClient(p.URL(), fastRetries(20))
			sc := newScatter(t, c, q.l, func(o *scatter.Options) { o.PageSize = 1 })
			ctx, cancel := context.WithCancel(context.Background())
			n := 0
			var last error
			for _, err := range sc.All(ctx, q.base) {
				if err != nil {
					last = err
					break
				}
				if n++; n == 5 {
					cancel()
				}
			}
			cancel()
			if !errors.Is(last, context.Canceled) {
				t.Errorf("got %v after %d items, want context.Canceled", last, n)
			}
			tr.CloseIdleConnections()
			p.Close()
			goleak.VerifyNone(t, ignore)
		})
	})
}
