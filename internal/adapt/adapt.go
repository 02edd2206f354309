// Package adapt bounds the requests a fan-out keeps in flight with a limit
// that backs off when DynamoDB throttles and creeps back when it does not
// (additive increase, multiplicative decrease, as TCP does with its
// congestion window).
//
// A Limiter starts at a limit the caller chooses (its configured maximum,
// or a lower limit it learned earlier), never goes above that maximum nor
// below 1. Each request takes a Ticket (Acquire, TryAcquire) and gives it
// back with what it saw (Release): Throttled halves the limit, Success
// adds 1/limit to it, so the limit grows by about one per round of limit
// successful requests, and Neutral (another error, a cancellation) leaves
// it alone. A round is what was in flight when the limit was last cut:
// requests that started before a cut and end throttled do not cut again,
// since they were sent at the old rate. The limit is kept as a fraction;
// Limit reports its integer part, which is what is admitted.
//
// Which responses mean "throttled" is the caller's business; Observe
// answers it for a response of the AWS SDK, from its error and from the
// attempts its retryer made.
//
// A Limiter is safe for concurrent use and starts no goroutine. Waiters
// in Acquire are served in arrival order.
package adapt

import (
	"context"
	"math"
	"sync"

	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/internal/backoff"
)

// Signal is what a request saw, given back with its Ticket.
type Signal int

const (
	// Neutral leaves the limit as it is: a request that failed for another
	// reason than throttling, or was cancelled.
	Neutral Signal = iota
	// Success adds 1/limit to the limit, up to the maximum.
	Success
	// Throttled halves the limit, down to 1, unless the request started
	// before the last cut.
	Throttled
)

// Ticket is a slot taken from a Limiter, to be given back with Release
// exactly once. Its zero value is not a slot.
type Ticket struct {
	seq uint64 // 1-based order of the grant
}

// Stats describes a Limiter's state.
type Stats struct {
	Limit    int // requests admitted at once now
	Max      int // the ceiling of Limit
	Min      int // the lowest Limit reached since New
	Cuts     int // times Limit was halved
	InFlight int // tickets taken and not released
}

// Limiter is an AIMD limit on requests in flight. Create it with New; the
// zero Limiter is not usable.
type Limiter struct {
	mu       sync.Mutex
	max      int
	limit    float64
	min      int
	cuts     int
	inflight int
	granted  uint64 // tickets granted so far
	mark     uint64 // tickets up to this one were granted before the last cut
	waiters  []*waiter
}

type waiter struct {
	ready chan struct{} // closed when the slot is granted
	t     Ticket
}

// New returns a Limiter whose limit starts at start and never exceeds
// ceiling; each is raised to 1 if below, and start is lowered to ceiling
// if above it.
func New(ceiling, start int) *Limiter {
	ceiling = max(ceiling, 1)
	start = min(max(start, 1), ceiling)
	return &Limiter{max: ceiling, limit: float64(start), min: start}
}

// admitted is the number of tickets the limit allows at once.
func (l *Limiter) admitted() int { return int(l.limit) }

// grant takes a slot; l.mu is held and a slot is free.
func (l *Limiter) grant() Ticket {
	l.inflight++
	l.granted++
	return Ticket{seq: l.granted}
}

// TryAcquire takes a slot if one is free and nobody waits for one.
func (l *Limiter) TryAcquire() (Ticket, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiters) > 0 || l.inflight >= l.admitted() {
		return Ticket{}, false
	}
	return l.grant(), true
}

// Acquire waits for a slot, or until ctx is done, when it returns ctx's
// error and holds no slot.
func (l *Limiter) Acquire(ctx context.Context) (Ticket, error) {
	l.mu.Lock()
	if len(l.waiters) == 0 && l.inflight < l.admitted() {
		t := l.grant()
		l.mu.Unlock()
		return t, nil
	}
	if err := ctx.Err(); err != nil {
		l.mu.Unlock()
		return Ticket{}, err
	}
	w := &waiter{ready: make(chan struct{})}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()

	select {
	case <-w.ready:
		return w.t, nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	select {
	case <-w.ready:
		// Granted while ctx ended: give the slot back, it is not used.
		l.mu.Unlock()
		l.Release(w.t, Neutral)
		return Ticket{}, ctx.Err()
	default:
	}
	for i, o := range l.waiters {
		if o == w {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			break
		}
	}
	l.mu.Unlock()
	return Ticket{}, ctx.Err()
}

// Release gives t back with what its request saw, and reports whether
// that cut the limit. Releasing the zero Ticket does nothing.
func (l *Limiter) Release(t Ticket, s Signal) (cut bool) {
	if t.seq == 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	switch s {
	case Throttled:
		if t.seq > l.mark {
			l.limit = math.Max(1, l.limit/2)
			l.mark = l.granted
			l.cuts++
			l.min = min(l.min, l.admitted())
			cut = true
		}
	case Success:
		l.limit = math.Min(float64(l.max), l.limit+1/l.limit)
	}
	for len(l.waiters) > 0 && l.inflight < l.admitted() {
		w := l.waiters[0]
		l.waiters[0] = nil
		l.waiters = l.waiters[1:]
		w.t = l.grant()
		close(w.ready)
	}
	return cut
}

// Limit returns the number of requests admitted at once now.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.admitted()
}

// Stats returns the Limiter's state.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Limit: l.admitted(), Max: l.max, Min: l.min, Cuts: l.cuts, InFlight: l.inflight}
}

// Observe returns the Signal of one call of the AWS SDK: Throttled if it
// failed with a throttling error (ProvisionedThroughputExceededException,
// ThrottlingException, RequestLimitExceeded and the others the SDK's
// retryer classifies so), or succeeded after the retryer retried such an
// error (md is the output's ResultMetadata, where the retryer records
// every attempt); Neutral for any other error; else Success. The retryer
// hides a throttle it overcame, so without md a fan-out would only learn
// of throttling once the retries are spent.
func Observe(md middleware.Metadata, err error) Signal {
	switch {
	case backoff.ThrottledAttempts(md, err) > 0:
		return Throttled
	case err != nil:
		return Neutral
	}
	return Success
}
