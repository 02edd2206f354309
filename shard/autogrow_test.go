package shard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// fakeClock is a clock the test moves; with step set, every reading
// moves it on by step, so a long Load sees time pass without waiting.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// throttledClient talks to s through a proxy that throttles PutItem and
// BatchWriteItem as cfg says, with quick retries so that tests do not
// wait on the SDK's backoff.
func throttledClient(t *testing.T, s *ddbtest.Server, cfg faultproxy.Config) (*dynamodb.Client, *faultproxy.Proxy) {
	t.Helper()
	p, err := faultproxy.New(s.Endpoint, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return s.Client(func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.Retryer = retry.NewStandard(func(ro *retry.StandardOptions) {
			ro.MaxAttempts = 8
			ro.MaxBackoff = 2 * time.Millisecond
			ro.RateLimiter = ratelimit.None
		})
	}), p
}

type decisionLog struct {
	mu        sync.Mutex
	decisions []shard.Decision
}

func (g *decisionLog) add(d shard.Decision) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.decisions = append(g.decisions, d)
}

func (g *decisionLog) kinds() []shard.DecisionKind {
	g.mu.Lock()
	defer g.mu.Unlock()
	var k []shard.DecisionKind
	for _, d := range g.decisions {
		k = append(k, d.Kind)
	}
	return k
}

// fencePassed is more than the fence of layoutOf's HistoryTTL (50 ms +
// 1 s): after it, a grow's new N is the writers' on their next write.
const fencePassed = 1200 * time.Millisecond

func newGrower(t *testing.T, clock *fakeClock, log *decisionLog, optFns ...func(*shard.GrowOptions)) *shard.Grower {
	t.Helper()
	g, err := shard.NewGrower(append([]func(*shard.GrowOptions){func(o *shard.GrowOptions) {
		o.Window, o.Sustain, o.MinAttempts, o.MaxN = time.Second, 3, 10, 16
		o.Now, o.OnDecision = clock.Now, log.add
	}}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAutoGrowSustained: Puts throttled 40 % of the time for many windows
// grow the base, doubling N up to MaxN, each decision reported; every Put
// that succeeded is found.
func TestAutoGrowSustained(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, _ := throttledClient(t, s, faultproxy.Config{ThrottleRate: 0.4, Ops: []string{"PutItem"}, Seed: 7})
		clock := &fakeClock{now: time.Unix(0, 0)}
		var log decisionLog
		g := newGrower(t, clock, &log)
		name := s.Table(t, "pk:S", "sk:S")
		tbl, err := shard.NewTable[Order](c, layoutOf(name, shard.Hash(4)), func(o *shard.Options) { o.Grower = g })
		if err != nil {
			t.Fatal(err)
		}
		var ok []string
		for i := range 400 {
			id := fmt.Sprint("o", i)
			grows := len(log.kinds())
			if err := tbl.Put(ctx, "hot", Order{ID: id}); err == nil {
				ok = append(ok, id)
			}
			clock.Advance(50 * time.Millisecond) // 20 Puts a window
			if len(log.kinds()) > grows {
				time.Sleep(fencePassed) // the next Put takes up the new N
			}
		}
		h, err := tbl.Shards(ctx, "hot")
		if err != nil || !slices.Equal(h, []int{4, 8, 16}) {
			t.Errorf("history %v, %v, want [4 8 16]", h, err)
		}
		if k := log.kinds(); !slices.Equal(k, []shard.DecisionKind{shard.Grow, shard.Grow}) {
			t.Errorf("decisions %v, want two grows", k)
		}
		for _, d := range log.decisions {
			if d.Base != "hot" || d.To != 2*d.From || d.Throttled*20 <= d.Attempts {
				t.Errorf("decision %+v: want base hot, doubling, more than 5 %% throttled", d)
			}
		}
		st := g.Stats()
		if st.Grows != 2 || st.HotWindows < 6 || st.Throttled == 0 || st.Attempts < 400 {
			t.Errorf("stats %+v", st)
		}
		for _, id := range ok {
			if _, err := tbl.Get(ctx, "hot", id); err != nil {
				t.Errorf("Get %s: %v", id, err)
			}
		}
	})
}

// TestAutoGrowBurst: throttling that lasts fewer than Sustain windows
// grows nothing, however intense; quiet windows reset the count.
func TestAutoGrowBurst(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, p := throttledClient(t, s, faultproxy.Config{})
		clock := &fakeClock{now: time.Unix(0, 0)}
		var log decisionLog
		g := newGrower(t, clock, &log)
		tbl, err := shard.NewTable[Order](c, layoutOf(s.Table(t, "pk:S", "sk:S"), shard.Hash(4)), func(o *shard.Options) { o.Grower = g })
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		windows := func(n int, rate float64) {
			if err := p.Set(faultproxy.Config{ThrottleRate: rate, Ops: []string{"PutItem"}, Seed: int64(i)}); err != nil {
				t.Fatal(err)
			}
			for range n * 20 {
				i++
				_ = tbl.Put(ctx, "day", Order{ID: fmt.Sprint("o", i)})
				clock.Advance(50 * time.Millisecond)
			}
		}
		for range 3 {
			windows(2, 0.8) // a burst of two hot windows
			windows(1, 0)   // then a quiet one
		}
		if k := log.kinds(); len(k) != 0 {
			t.Errorf("decisions %v, want none", k)
		}
		if h, err := tbl.Shards(ctx, "day"); err != nil || !slices.Equal(h, []int{4}) {
			t.Errorf("history %v, %v, want [4]", h, err)
		}
		if st := g.Stats(); st.HotWindows < 4 || st.Grows != 0 {
			t.Errorf("stats %+v, want hot windows and no grow", st)
		}
	})
}

// TestAutoGrowLoad: Load reports unprocessed items per base; a base whose
// writes stay unprocessed grows while the load runs, and the load writes
// every item at its base's N at the time.
func TestAutoGrowLoad(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, _ := throttledClient(t, s, faultproxy.Config{UnprocessedRate: 0.5, Ops: []string{"BatchWriteItem"}, Seed: 5})
		clock := &fakeClock{now: time.Unix(0, 0), step: 20 * time.Millisecond}
		var log decisionLog
		g := newGrower(t, clock, &log)
		name := s.Table(t, "pk:S", "sk:S")
		tbl, err := shard.NewTable[Order](c, layoutOf(name, shard.Hash(2)), func(o *shard.Options) { o.Grower = g })
		if err != nil {
			t.Fatal(err)
		}
		var in []pair
		for i := range 1500 {
			in = append(in, pair{"hot", Order{ID: fmt.Sprint("o", i)}})
		}
		if _, err := tbl.Load(ctx, seq2(in), func(o *shard.LoadOptions) { o.MaxConcurrency = 2 }); err != nil {
			t.Fatal(err)
		}
		h, err := tbl.Shards(ctx, "hot")
		if err != nil || len(h) < 2 {
			t.Errorf("history %v, %v, want the base grown", h, err)
		}
		if g.Stats().Grows == 0 || !slices.Contains(log.kinds(), shard.Grow) {
			t.Errorf("no grow decision: %+v", g.Stats())
		}
		if got := scanAll(t, s.Client(), name); len(got) != len(in) {
			t.Errorf("%d items stored, want %d", len(got), len(in))
		}
		for _, p := range in[:100] {
			if _, err := tbl.Get(ctx, "hot", p.item.ID); err != nil {
				t.Errorf("Get %s: %v", p.item.ID, err)
			}
		}
	})
}

// TestAutoGrowShrink: a base written slowly and never throttled gets a
// shrink recommendation after Sustain windows; its N does not change.
func TestAutoGrowShrink(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		clock := &fakeClock{now: time.Unix(0, 0)}
		var log decisionLog
		g := newGrower(t, clock, &log, func(o *shard.GrowOptions) { o.ShrinkBelow = 50 })
		tbl, err := shard.NewTable[Order](s.Client(), layoutOf(s.Table(t, "pk:S", "sk:S"), shard.Hash(8)), func(o *shard.Options) { o.Grower = g })
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100 { // 20 a second on 8 shards: 2.5 per shard
			if err := tbl.Put(ctx, "cold", Order{ID: fmt.Sprint("o", i)}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(50 * time.Millisecond)
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		if len(log.decisions) == 0 || log.decisions[0].Kind != shard.RecommendShrink || log.decisions[0].To != 4 {
			t.Errorf("decisions %+v, want a recommendation to shrink to 4", log.decisions)
		}
		if h, _ := tbl.Shards(ctx, "cold"); !slices.Equal(h, []int{8}) {
			t.Errorf("history %v, want [8] (a recommendation changes nothing)", h)
		}
	})
}

func TestNewGrowerErrors(t *testing.T) {
	for name, f := range map[string]func(*shard.GrowOptions){
		"negative window": func(o *shard.GrowOptions) { o.Window = -1 },
		"threshold > 1":   func(o *shard.GrowOptions) { o.Threshold = 1.5 },
		"factor 1":        func(o *shard.GrowOptions) { o.Factor = 1 },
		"MaxN too large":  func(o *shard.GrowOptions) { o.MaxN = shard.MaxN + 1 },
	} {
		if _, err := shard.NewGrower(f); !errors.Is(err, shard.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
