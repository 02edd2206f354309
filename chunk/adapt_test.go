package chunk

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// batchGets wraps a real SDK client (it only counts and, when asked,
// holds calls; the server behind it answers): for every BatchGetItem it
// records how many were in progress when it started, itself included, and
// whether one had already come back having met throttling.
type batchGets struct {
	*dynamodb.Client
	mu        sync.Mutex
	now       int
	starts    []getStart
	throttled bool
	calls     int
	// hold, when set, makes each call wait until holdN are in progress.
	hold  chan struct{}
	holdN int
	// after runs as call n (1-based) returns.
	after func(n int)
}

type getStart struct {
	inflight      int
	afterThrottle bool
}

func (w *batchGets) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	w.mu.Lock()
	w.now++
	w.calls++
	n := w.calls
	w.starts = append(w.starts, getStart{inflight: w.now, afterThrottle: w.throttled})
	hold := w.hold
	if hold != nil && w.now >= w.holdN {
		close(hold)
		w.hold = nil
	}
	w.mu.Unlock()
	var out *dynamodb.BatchGetItemOutput
	var err error
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err == nil {
		out, err = w.Client.BatchGetItem(ctx, in, optFns...)
	}
	w.mu.Lock()
	w.now--
	w.throttled = w.throttled || batchThrottled(out, err)
	after := w.after
	w.mu.Unlock()
	if after != nil {
		after(n)
	}
	return out, err
}

// batchThrottled reports whether a call failed with the proxy's
// throttling error or succeeded after the SDK retried one.
func batchThrottled(out *dynamodb.BatchGetItemOutput, err error) bool {
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

// peakAfterThrottle returns the most calls in progress at the start of a
// call that started after the first throttled one came back, skipping the
// first skip such calls, and how many it looked at.
func (w *batchGets) peakAfterThrottle(skip int) (peak, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.starts {
		if !s.afterThrottle {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		peak, n = max(peak, s.inflight), n+1
	}
	return peak, n
}

func (w *batchGets) peak() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := 0
	for _, s := range w.starts {
		p = max(p, s.inflight)
	}
	return p
}

// fastClient is a client for an endpoint behind the proxy with the
// recommended retry settings, many attempts and short backoff.
func fastClient(endpoint string) *dynamodb.Client {
	return localddb.NewClient(endpoint, func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			dynashard.RetryForFanOut(so)
			so.MaxAttempts = 12
			so.MaxBackoff = 20 * time.Millisecond
		})
	})
}

// adaptConcurrency is the read windows' bound in these tests: chunks of
// 100 bytes make requests of 100 chunks, far below 32 MiB, so each window
// holds MaxConcurrency requests.
const adaptConcurrency = 8

// putBig stores a payload of the given number of windows in 100-byte
// chunks: adaptConcurrency requests of 100 chunks a window.
func putBig(t *testing.T, e *env, key Key, windows int) []byte {
	t.Helper()
	data := payload(windows*adaptConcurrency*100*100, 7, false)
	if _, err := e.store(t, func(o *Options) { o.ChunkSize = 100 }).Put(context.Background(), key, data); err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReadBacksOffWhenThrottled: with a third of the BatchGetItem
// attempts throttled, a read halves the calls it keeps in flight (once
// those sent before the first throttle have come back, fewer than its
// bound are ever in flight), reports it in ReadStats, and returns the
// payload exactly.
func TestReadBacksOffWhenThrottled(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		key := sKey("throttled")
		data := putBig(t, e, key, 4)
		p, err := faultproxy.New(srv.Endpoint, faultproxy.Config{
			ThrottleRate: 0.3, Latency: time.Millisecond, Ops: []string{"BatchGetItem"}, Seed: 9,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		w := &batchGets{Client: fastClient(p.URL())}
		st := newStore(t, w, e.parents, e.chunks, func(o *Options) { o.MaxConcurrency = adaptConcurrency })
		got, _, err := st.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("got %d bytes, want the %d stored", len(got), len(data))
		}
		rs := st.ReadStats()
		if rs.Throttled == 0 || rs.Backoffs == 0 || rs.BatchGets < 4*adaptConcurrency {
			t.Fatalf("got %+v, want throttled calls, backoffs, at least %d calls", rs, 4*adaptConcurrency)
		}
		if rs.MinConcurrencyLimit < 1 || rs.MinConcurrencyLimit >= adaptConcurrency {
			t.Errorf("got MinConcurrencyLimit %d, want 1..%d", rs.MinConcurrencyLimit, adaptConcurrency-1)
		}
		if ps := p.Stats().Total; ps.Throttled == 0 {
			t.Fatalf("the proxy throttled nothing: %+v", ps)
		}
		peak, n := w.peakAfterThrottle(adaptConcurrency)
		if n == 0 {
			t.Fatal("no call started after the first throttle")
		}
		if peak >= adaptConcurrency {
			t.Errorf("after the first throttle, %d calls were in flight at once; want fewer than %d", peak, adaptConcurrency)
		}
		t.Logf("%s: %+v; after the first throttle peak %d in flight over %d calls", srv.Kind, rs, peak, n)
	})
}

// TestReadUnthrottledKeepsBound: without throttling a window has its
// bound of calls in flight at once (the wrapper holds every call until
// they are all there) and ReadStats reports no backoff.
func TestReadUnthrottledKeepsBound(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		key := sKey("unthrottled")
		data := putBig(t, e, key, 1)
		hold := make(chan struct{})
		w := &batchGets{Client: e.c, hold: hold, holdN: adaptConcurrency}
		st := newStore(t, w, e.parents, e.chunks, func(o *Options) { o.MaxConcurrency = adaptConcurrency })
		type res struct {
			data []byte
			err  error
		}
		done := make(chan res, 1)
		go func() {
			got, _, err := st.Get(context.Background(), key)
			done <- res{got, err}
		}()
		select {
		case <-hold:
		case <-time.After(30 * time.Second): // liveness only: stuck below the bound
			t.Fatalf("only %d calls ever in flight at once, want %d", w.peak(), adaptConcurrency)
		}
		r := <-done
		if r.err != nil || !bytes.Equal(r.data, data) {
			t.Fatalf("got %d bytes, %v; want the %d stored", len(r.data), r.err, len(data))
		}
		if p := w.peak(); p != adaptConcurrency {
			t.Errorf("got %d in flight at most, want %d", p, adaptConcurrency)
		}
		if rs := st.ReadStats(); rs.Throttled != 0 || rs.Backoffs != 0 || rs.ConcurrencyLimit != 0 || rs.MinConcurrencyLimit != 0 || rs.BatchGets == 0 {
			t.Errorf("got %+v, want calls and no throttling, no backoff, no learned limit", rs)
		}
	})
}

// TestThrottledReadCancel: cancelling a throttled read ends it with ctx's
// error (the package's TestMain checks that no goroutine is left).
func TestThrottledReadCancel(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		key := sKey("cancel")
		putBig(t, e, key, 3) // cancelled in the second window
		p, err := faultproxy.New(srv.Endpoint, faultproxy.Config{
			ThrottleRate: 0.5, Latency: time.Millisecond, Ops: []string{"BatchGetItem"}, Seed: 11,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := &batchGets{Client: fastClient(p.URL()), after: func(n int) {
			if n == adaptConcurrency+2 { // in the second window
				cancel()
			}
		}}
		st := newStore(t, w, e.parents, e.chunks, func(o *Options) { o.MaxConcurrency = adaptConcurrency })
		if _, _, err := st.Get(ctx, key); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
}
