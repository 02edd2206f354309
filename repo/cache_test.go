package repo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time { return f.t }

func newTestCache(entries int, bytes int64, ttl time.Duration) (*cache[string], *fakeClock) {
	c := newCache[string](entries, bytes, ttl)
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	c.now = clk.now
	return c, clk
}

func loader(v string, size int64, calls *atomic.Int64) func(context.Context) (string, int64, error) {
	return func(context.Context) (string, int64, error) {
		calls.Add(1)
		return v, size, nil
	}
}

func TestCacheHitMissTTL(t *testing.T) {
	c, clk := newTestCache(10, 1<<20, time.Minute)
	var calls atomic.Int64
	ctx := context.Background()
	for i := range 3 {
		v, err := c.get(ctx, "k", loader("v", 1, &calls))
		if err != nil || v != "v" {
			t.Fatalf("get %d: got %q, %v", i, v, err)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("loads = %d, want 1", got)
	}
	clk.t = clk.t.Add(time.Minute)
	c.get(ctx, "k", loader("v2", 1, &calls))
	if got := calls.Load(); got != 2 {
		t.Errorf("loads after TTL = %d, want 2", got)
	}
	st := c.stats()
	if st.Hits != 2 || st.Misses != 2 || st.Entries != 1 {
		t.Errorf("stats = %+v, want 2 hits, 2 misses, 1 entry", st)
	}
}

func TestCacheBounds(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		c, _ := newTestCache(3, 1<<20, time.Hour)
		var calls atomic.Int64
		for i := range 5 {
			c.get(context.Background(), fmt.Sprint(i), loader("v", 10, &calls))
		}
		if st := c.stats(); st.Entries != 3 || st.Evictions != 2 || st.Bytes != 30 {
			t.Errorf("stats = %+v, want 3 entries, 2 evictions, 30 bytes", st)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		c, _ := newTestCache(100, 100, time.Hour)
		var calls atomic.Int64
		for i := range 5 {
			c.get(context.Background(), fmt.Sprint(i), loader("v", 40, &calls))
		}
		if st := c.stats(); st.Entries != 2 || st.Bytes != 80 || st.Evictions != 3 {
			t.Errorf("stats = %+v, want 2 entries of 40 bytes, 3 evictions", st)
		}
		c.get(context.Background(), "huge", loader("v", 101, &calls))
		if st := c.stats(); st.Entries != 2 || st.Bytes != 80 {
			t.Errorf("an entry over the byte bound was cached: %+v", st)
		}
	})
}

func TestCacheInvalidate(t *testing.T) {
	c, _ := newTestCache(10, 1<<20, time.Hour)
	var calls atomic.Int64
	ctx := context.Background()
	c.get(ctx, "k", loader("old", 1, &calls))
	c.invalidate("k")
	v, _ := c.get(ctx, "k", loader("new", 1, &calls))
	if v != "new" {
		t.Errorf("after invalidate got %q, want new", v)
	}
	if st := c.stats(); st.Evictions != 0 {
		t.Errorf("invalidation counted as eviction: %+v", st)
	}
}

// TestCacheLoadRacingWrite: a load that began before a write must not be
// stored, or the cache would serve the pre-write value until the TTL.
func TestCacheLoadRacingWrite(t *testing.T) {
	c, _ := newTestCache(10, 1<<20, time.Hour)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.get(ctx, "k", func(context.Context) (string, int64, error) {
			close(started)
			<-release
			return "stale", 1, nil
		})
	}()
	<-started
	c.invalidate("k")
	close(release)
	<-done
	var calls atomic.Int64
	v, _ := c.get(ctx, "k", loader("fresh", 1, &calls))
	if v != "fresh" || calls.Load() != 1 {
		t.Errorf("got %q after %d loads, want fresh after 1", v, calls.Load())
	}
}

func TestCacheCollapsesConcurrentMisses(t *testing.T) {
	c, _ := newTestCache(10, 1<<20, time.Hour)
	var calls atomic.Int64
	release := make(chan struct{})
	load := func(context.Context) (string, int64, error) {
		calls.Add(1)
		<-release
		return "v", 1, nil
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := c.get(context.Background(), "k", load); v != "v" || err != nil {
				t.Errorf("got %q, %v", v, err)
			}
		}()
	}
	// Let every goroutine reach the shared load before it finishes.
	for c.stats().Misses < 50 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if got := calls.Load(); got != 1 {
		t.Errorf("loads = %d, want 1", got)
	}
}

func TestCacheErrorsNotCachedAndCtxHonoured(t *testing.T) {
	c, _ := newTestCache(10, 1<<20, time.Hour)
	boom := errors.New("boom")
	if _, err := c.get(context.Background(), "k", func(context.Context) (string, int64, error) { return "", 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if st := c.stats(); st.Entries != 0 {
		t.Errorf("error cached: %+v", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	go func() {
		for c.stats().Misses < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := c.get(ctx, "slow", func(context.Context) (string, int64, error) { <-release; return "v", 1, nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// TestCachePanicInLoad: a panic in the shared load is raised again on the
// goroutine of every caller waiting for it, not on the load's (where it
// would end the process), and nothing is stored.
func TestCachePanicInLoad(t *testing.T) {
	c, _ := newTestCache(10, 1<<20, time.Hour)
	boom := errors.New("boom")
	release := make(chan struct{})
	load := func(context.Context) (string, int64, error) {
		<-release
		panic(boom)
	}
	const callers = 3
	got := make(chan any, callers)
	for range callers {
		go func() {
			defer func() { got <- recover() }()
			c.get(context.Background(), "k", load)
		}()
	}
	for c.stats().Misses < callers {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range callers {
		v := <-got
		if err, ok := v.(error); !ok || !errors.Is(err, boom) {
			t.Errorf("caller recovered %v, want a panic matching boom", v)
		}
	}
	var calls atomic.Int64
	if v, err := c.get(context.Background(), "k", loader("v", 1, &calls)); v != "v" || err != nil || calls.Load() != 1 {
		t.Errorf("after the panic: got %q, %v after %d loads; want v after 1", v, err, calls.Load())
	}
}
