package adapt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// take acquires n tickets without waiting, failing t if any is refused.
func take(t *testing.T, l *Limiter, n int) []Ticket {
	t.Helper()
	ts := make([]Ticket, n)
	for i := range ts {
		var ok bool
		if ts[i], ok = l.TryAcquire(); !ok {
			t.Fatalf("TryAcquire %d of %d refused; stats %+v", i+1, n, l.Stats())
		}
	}
	return ts
}

func TestNewClamps(t *testing.T) {
	for _, tc := range []struct{ ceiling, start, limit, max int }{
		{8, 8, 8, 8}, {8, 3, 3, 8}, {8, 20, 8, 8}, {8, 0, 1, 8}, {8, -2, 1, 8}, {0, 5, 1, 1}, {-1, -1, 1, 1},
	} {
		st := New(tc.ceiling, tc.start).Stats()
		if st.Limit != tc.limit || st.Max != tc.max || st.Min != tc.limit || st.InFlight != 0 {
			t.Errorf("New(%d, %d): got %+v, want Limit=Min=%d Max=%d", tc.ceiling, tc.start, st, tc.limit, tc.max)
		}
	}
}

// TestAdmitsLimit: exactly Limit tickets are admitted at once, and a
// release admits one more.
func TestAdmitsLimit(t *testing.T) {
	for _, n := range []int{1, 2, 5, 32} {
		l := New(n, n)
		ts := take(t, l, n)
		if _, ok := l.TryAcquire(); ok {
			t.Fatalf("limit %d: ticket %d admitted", n, n+1)
		}
		l.Release(ts[0], Neutral)
		ts = append(ts[1:], take(t, l, 1)...)
		if _, ok := l.TryAcquire(); ok {
			t.Fatalf("limit %d: ticket admitted beyond the limit after a release", n)
		}
		for _, tk := range ts {
			l.Release(tk, Neutral)
		}
		if st := l.Stats(); st.InFlight != 0 || st.Limit != n {
			t.Errorf("limit %d: got %+v after releasing everything", n, st)
		}
	}
}

// TestCutOncePerRound: a throttle halves the limit; throttles of requests
// that were in flight at the cut do not cut again; a throttle of a request
// that started after the cut does.
func TestCutOncePerRound(t *testing.T) {
	l := New(16, 16)
	old := take(t, l, 16)
	if !l.Release(old[0], Throttled) {
		t.Fatal("first throttle did not cut")
	}
	if got := l.Limit(); got != 8 {
		t.Fatalf("got limit %d after one cut from 16, want 8", got)
	}
	for _, tk := range old[1:8] {
		if l.Release(tk, Throttled) {
			t.Fatal("a request of the old round cut the limit again")
		}
	}
	if got := l.Limit(); got != 8 {
		t.Fatalf("got limit %d after throttles of the old round, want 8", got)
	}
	// 8 of the old round are still in flight: nothing new is admitted.
	if _, ok := l.TryAcquire(); ok {
		t.Fatal("admitted a request while the old round fills the new limit")
	}
	for _, tk := range old[8:] {
		l.Release(tk, Neutral)
	}
	fresh := take(t, l, 8)
	if !l.Release(fresh[0], Throttled) {
		t.Fatal("a throttle of the new round did not cut")
	}
	if got := l.Limit(); got != 4 {
		t.Fatalf("got limit %d after two cuts from 16, want 4", got)
	}
	for _, tk := range fresh[1:] {
		l.Release(tk, Neutral)
	}
	st := l.Stats()
	if st.Cuts != 2 || st.Min != 4 || st.InFlight != 0 {
		t.Errorf("got %+v, want Cuts=2 Min=4 InFlight=0", st)
	}
}

// TestNeverBelowOne: throttles, one round after another, leave one
// request admitted.
func TestNeverBelowOne(t *testing.T) {
	l := New(8, 8)
	for range 10 {
		tk := take(t, l, 1)[0]
		l.Release(tk, Throttled)
		if got := l.Limit(); got < 1 {
			t.Fatalf("limit %d below 1", got)
		}
	}
	if st := l.Stats(); st.Limit != 1 || st.Min != 1 {
		t.Errorf("got %+v, want Limit=Min=1", st)
	}
	take(t, l, 1) // one request is still admitted
}

// TestAdditiveIncrease: from 1, successes raise the limit by one per round
// of Limit successes (between L and L+1 of them to go from L to L+1), and
// never above the ceiling.
func TestAdditiveIncrease(t *testing.T) {
	const ceiling = 10
	l := New(ceiling, 1)
	successes := 0
	for cur := 1; cur < ceiling; {
		tk := take(t, l, 1)[0]
		l.Release(tk, Success)
		successes++
		if got := l.Limit(); got != cur {
			if got != cur+1 {
				t.Fatalf("limit went from %d to %d in one success", cur, got)
			}
			if successes < cur || successes > cur+1 {
				t.Errorf("limit %d → %d took %d successes, want %d or %d", cur, got, successes, cur, cur+1)
			}
			cur, successes = got, 0
		}
	}
	for range 100 {
		l.Release(take(t, l, 1)[0], Success)
	}
	if got := l.Limit(); got != ceiling {
		t.Errorf("got limit %d after many successes, want the ceiling %d", got, ceiling)
	}
}

// TestNeutral: a Neutral release changes nothing but the slot count.
func TestNeutral(t *testing.T) {
	l := New(6, 3)
	for range 20 {
		l.Release(take(t, l, 1)[0], Neutral)
	}
	if st := l.Stats(); st.Limit != 3 || st.Cuts != 0 {
		t.Errorf("got %+v, want Limit 3 and no cut", st)
	}
	l.Release(Ticket{}, Throttled) // the zero Ticket: nothing
	if st := l.Stats(); st.Limit != 3 || st.Cuts != 0 || st.InFlight != 0 {
		t.Errorf("zero Ticket changed %+v", st)
	}
}

// TestAcquireFIFO: waiters are admitted in arrival order as slots free.
func TestAcquireFIFO(t *testing.T) {
	l := New(1, 1)
	first := take(t, l, 1)[0]
	const n = 5
	got := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := l.Acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			got <- i
			l.Release(tk, Neutral)
		}()
		waitFor(t, func() bool { return l.waiting() == i+1 }) // arrival order is i
	}
	l.Release(first, Neutral)
	wg.Wait()
	close(got)
	want := 0
	for i := range got {
		if i != want {
			t.Fatalf("waiter %d admitted before waiter %d", i, want)
		}
		want++
	}
}

// TestAcquireCancel: a waiter whose ctx ends returns its error, holds no
// slot and leaves the others waiting in order.
func TestAcquireCancel(t *testing.T) {
	l := New(1, 1)
	held := take(t, l, 1)[0]
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := l.Acquire(ctx)
		errc <- err
	}()
	waitFor(t, func() bool { return l.waiting() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if st := l.Stats(); st.InFlight != 1 || l.waiting() != 0 {
		t.Fatalf("after the cancelled wait: %+v, %d waiting; want 1 in flight, none waiting", st, l.waiting())
	}
	// An already cancelled ctx fails at once when no slot is free.
	if _, err := l.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	l.Release(held, Neutral)
	if _, ok := l.TryAcquire(); !ok {
		t.Fatal("slot not free after the holder released it")
	}
}

// TestConcurrent: many goroutines acquiring and releasing with every
// signal never exceed the limit, and end with nothing in flight (run with
// -race).
func TestConcurrent(t *testing.T) {
	l := New(8, 8)
	var mu sync.Mutex
	inflight, peak := 0, 0
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i := range 200 {
				if g == 0 && i == 150 {
					cancel() // one goroutine gives up part-way
				}
				tk, err := l.Acquire(ctx)
				if err != nil {
					continue
				}
				mu.Lock()
				inflight++
				peak = max(peak, inflight)
				if lim := l.Stats().Max; inflight > lim {
					t.Errorf("%d in flight, ceiling %d", inflight, lim)
				}
				inflight--
				mu.Unlock()
				l.Release(tk, Signal((g+i)%3))
			}
		}()
	}
	wg.Wait()
	if st := l.Stats(); st.InFlight != 0 || st.Limit < 1 || st.Limit > st.Max || st.Cuts == 0 {
		t.Errorf("got %+v, want nothing in flight, 1 ≤ Limit ≤ Max, some cuts", st)
	}
	if peak == 0 {
		t.Error("nothing ran")
	}
}

func TestObserveErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Signal
	}{
		{nil, Success},
		{&types.ProvisionedThroughputExceededException{}, Throttled},
		{fmt.Errorf("wrapped: %w", &types.ThrottlingException{}), Throttled},
		{&types.RequestLimitExceeded{}, Throttled},
		{&smithy.GenericAPIError{Code: "ThrottlingException"}, Throttled},
		{&types.ResourceNotFoundException{}, Neutral},
		{context.Canceled, Neutral},
		{errors.New("connection reset"), Neutral},
	} {
		if got := Observe(middleware.Metadata{}, tc.err); got != tc.want {
			t.Errorf("Observe(%v): got %v, want %v", tc.err, got, tc.want)
		}
	}
}

// BenchmarkTryAcquireRelease is the limiter's cost per request in a
// fan-out, to set beside a request's round trip (milliseconds).
func BenchmarkTryAcquireRelease(b *testing.B) {
	l := New(32, 32)
	b.ReportAllocs()
	for b.Loop() {
		t, _ := l.TryAcquire()
		l.Release(t, Success)
	}
}
