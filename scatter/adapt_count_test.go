package scatter_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// TestCountBacksOff: with a third of the Query attempts throttled, Count
// halves the requests it keeps in flight, reports it in Stats, and still
// counts every item once.
func TestCountBacksOff(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(43, 43))
		ds := newDataset(t, s, direct, r, 'S', 64, 12)
		p := newProxy(t, s.Endpoint, faultproxy.Config{
			ThrottleRate: 0.3, Latency: 2 * time.Millisecond, Ops: []string{"Query"}, Seed: 13,
		})
		c, _ := testClient(p.URL(), fastRetries(12))
		w := &inflight{Client: c}
		q := ds.read(shard.Hash(ds.n))
		sc := newScatter(t, w, q.l, func(o *scatter.Options) { o.PageSize = 2 })
		const maxc = scatter.DefaultMaxConcurrency
		n, err := sc.Count(context.Background(), q.base)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(reference(t, direct, q, suffixRange(ds.n))); n != int64(want) {
			t.Fatalf("got count %d, want %d", n, want)
		}
		st := sc.Stats()
		if st.Throttled == 0 || st.Backoffs == 0 || st.MinConcurrencyLimit < 1 || st.MinConcurrencyLimit >= maxc {
			t.Fatalf("got %+v, want throttled requests, backoffs, a lowest limit in 1..%d", st, maxc-1)
		}
		seen := 0
		peak, k := w.peak(func(_ int, s start) bool {
			if !s.afterThrottle {
				return false
			}
			seen++
			return seen > maxc
		})
		if k == 0 || peak >= maxc {
			t.Errorf("after the first throttle: peak %d in flight over %d requests, want fewer than %d", peak, k, maxc)
		}
	})
}
