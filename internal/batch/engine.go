package batch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
)

// outcome is what one request did.
type outcome struct {
	left     []*job // entries returned unprocessed
	items    []Item // items read
	capacity float64
	attempts int
	err      error // the request failed; no entry is known to be done
}

type sender func(ctx context.Context, batch []*job) outcome

// engine runs one call: workers take requests built from leftovers first,
// then fresh entries, send them, and put leftovers back after a backoff.
// All state is guarded by mu.
type engine struct {
	opts       Options
	send       sender
	maxCount   int
	maxBytes   int64 // 0: no byte limit
	sizeDriven bool  // a partial result with progress needs no backoff (BatchGetItem)
	ordered    bool  // hold back an entry whose key is still in progress (WriteSeq)
	pull       func() (*job, error)
	rest       func() []*job // fresh entries never pulled, reported when stopping
	sem        *semaphore.Weighted

	mu          sync.Mutex
	cond        sync.Cond
	queue       []*job         // leftovers ready to be sent again
	peek        *job           // a pulled entry that did not fit the last request
	held        *job           // a pulled entry waiting for its key to be done
	pending     map[string]int // keys pulled and not done (ordered only)
	exhausted   bool           // pull has nothing more
	outstanding int            // requests in flight or backing off
	stalls      int            // consecutive rounds without progress
	round       int            // bumped whenever stalls changes
	stopping    bool
	stopCh      chan struct{} // closed when stopping, to cut backoffs short
	cause       error
	undone      []*job
	items       []Item
	stats       Stats
}

// feed makes the engine draw its entries from jobs, in order.
func (e *engine) feed(jobs []*job) {
	next := 0
	e.pull = func() (*job, error) {
		if next == len(jobs) {
			return nil, nil
		}
		next++
		return jobs[next-1], nil
	}
	e.rest = func() []*job { return jobs[next:] }
}

func newEngine(opts Options, send sender, maxCount int, maxBytes int64, sizeDriven bool) *engine {
	e := &engine{
		opts: opts, send: send, maxCount: maxCount, maxBytes: maxBytes, sizeDriven: sizeDriven,
		sem:     semaphore.NewWeighted(opts.MaxInFlightBytes),
		pending: map[string]int{},
		stopCh:  make(chan struct{}),
	}
	e.cond.L = &e.mu
	return e
}

// run drives the call to its end and returns the entries not done, in
// input order, with the cause. Every goroutine it starts has ended when it
// returns.
func (e *engine) run(ctx context.Context) ([]*job, error) {
	cancelled := make(chan struct{})
	stopWatch := context.AfterFunc(ctx, func() {
		defer close(cancelled)
		e.mu.Lock()
		e.failLocked(ctx.Err())
		e.cond.Broadcast()
		e.mu.Unlock()
	})
	var g errgroup.Group
	g.SetLimit(e.opts.MaxConcurrency)
	for range e.opts.MaxConcurrency {
		g.Go(func() error {
			e.worker(ctx)
			return nil
		})
	}
	_ = g.Wait()
	if !stopWatch() {
		<-cancelled
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	left := e.undone
	left = append(left, e.queue...)
	if e.peek != nil {
		left = append(left, e.peek)
	}
	if e.held != nil {
		left = append(left, e.held)
	}
	if e.rest != nil {
		left = append(left, e.rest()...)
	}
	slices.SortFunc(left, func(a, b *job) int { return a.seq - b.seq })
	return left, e.cause
}

func (e *engine) worker(ctx context.Context) {
	for {
		batch, round, ok := e.next()
		if !ok {
			return
		}
		e.do(ctx, batch, round)
	}
}

// next blocks until there is a request to send, or returns false when the
// call is over for this worker.
func (e *engine) next() ([]*job, int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		if e.stopping {
			return nil, 0, false
		}
		if batch := e.buildLocked(); len(batch) > 0 {
			e.outstanding++
			e.stats.Requests++
			return batch, e.round, true
		}
		if e.stopping {
			return nil, 0, false
		}
		if e.exhausted && e.held == nil && e.peek == nil && len(e.queue) == 0 && e.outstanding == 0 {
			e.cond.Broadcast() // wake the other idle workers so they end too
			return nil, 0, false
		}
		e.cond.Wait()
	}
}

// buildLocked takes leftovers first, then fresh entries, up to the request
// limits. Folding leftovers into a request with fresh entries keeps
// requests full instead of resending a few entries at a time.
func (e *engine) buildLocked() []*job {
	var batch []*job
	size := int64(requestOverhead)
	fits := func(j *job) bool {
		return len(batch) == 0 || e.maxBytes == 0 || size+j.wire <= e.maxBytes
	}
	retry := false
	for len(e.queue) > 0 && len(batch) < e.maxCount && fits(e.queue[0]) {
		j := e.queue[0]
		e.queue = e.queue[1:]
		batch = append(batch, j)
		size += j.wire
		retry = true
	}
	if retry && e.opts.RetryBudget != 0 && (e.opts.RetryBudget < 0 || e.stats.Retries >= e.opts.RetryBudget) {
		e.queue = append(batch, e.queue...)
		e.failLocked(ErrRetryBudget)
		return nil
	}
	for len(batch) < e.maxCount {
		j := e.freshLocked()
		if j == nil {
			break
		}
		if !fits(j) {
			e.peek = j
			break
		}
		batch = append(batch, j)
		size += j.wire
	}
	if e.stopping {
		e.queue = append(batch, e.queue...)
		return nil
	}
	if retry {
		e.stats.Retries++
	}
	return batch
}

// freshLocked returns the next entry never sent, or nil if none can go now.
func (e *engine) freshLocked() *job {
	if j := e.peek; j != nil {
		e.peek = nil
		return j
	}
	if j := e.held; j != nil {
		if e.pending[j.fp] > 0 {
			return nil
		}
		e.held = nil
		e.pending[j.fp]++
		return j
	}
	if e.exhausted || e.stopping {
		return nil
	}
	j, err := e.pull()
	if err != nil {
		e.exhausted = true
		if j != nil {
			e.undone = append(e.undone, j)
		}
		e.failLocked(err)
		return nil
	}
	if j == nil {
		e.exhausted = true
		return nil
	}
	if e.ordered {
		if e.pending[j.fp] > 0 {
			e.held = j
			return nil
		}
		e.pending[j.fp]++
	}
	return j
}

// do sends one request and settles its outcome.
func (e *engine) do(ctx context.Context, batch []*job, round int) {
	var weight int64 = requestOverhead
	for _, j := range batch {
		weight += j.wire
	}
	weight = min(weight, e.opts.MaxInFlightBytes)
	var out outcome
	if err := e.sem.Acquire(ctx, weight); err != nil {
		out = outcome{err: err}
	} else {
		out = e.send(ctx, batch)
		e.sem.Release(weight)
	}

	e.mu.Lock()
	e.stats.Attempts += out.attempts
	e.stats.ConsumedCapacity += out.capacity
	e.items = append(e.items, out.items...)
	left := out.left
	if out.err != nil {
		switch {
		case ctx.Err() != nil:
			e.failLocked(ctx.Err())
			e.settleLocked(batch, batch)
			return
		case isThrottle(out.err):
			e.stats.Throttled++
			left = batch
		default:
			e.failLocked(out.err)
			e.settleLocked(batch, batch)
			return
		}
	}
	if len(left) == 0 {
		e.settleLocked(batch, nil)
		return
	}
	e.stats.UnprocessedRounds++
	progress := len(left) < len(batch)
	switch {
	case progress:
		e.stalls = 0
		e.round++
	case round == e.round:
		// Requests sent in the same round stall together: count it once.
		e.stalls++
		e.round++
	}
	if e.stalls > e.opts.MaxStalls {
		e.failLocked(ErrStalled)
		e.settleLocked(batch, left)
		return
	}
	if e.opts.RetryBudget < 0 || (e.opts.RetryBudget > 0 && e.stats.Retries >= e.opts.RetryBudget) {
		e.failLocked(ErrRetryBudget)
		e.settleLocked(batch, left)
		return
	}
	var delay time.Duration
	if !(progress && e.sizeDriven) {
		delay = e.opts.jitter(backoff(e.opts.BaseDelay, e.opts.MaxDelay, e.stalls))
	}
	e.progressLocked()
	e.mu.Unlock()

	slept := sleep(ctx, e.stopCh, delay)

	e.mu.Lock()
	if !slept {
		if ctx.Err() != nil {
			e.failLocked(ctx.Err())
		}
		e.settleLocked(batch, left)
		return
	}
	e.doneLocked(batch, left)
	e.queue = append(e.queue, left...)
	e.outstanding--
	e.cond.Broadcast()
	e.mu.Unlock()
}

// settleLocked ends a request whose leftovers will not be sent again: they
// are undone. It unlocks mu.
func (e *engine) settleLocked(batch, left []*job) {
	e.doneLocked(batch, left)
	e.undone = append(e.undone, left...)
	e.outstanding--
	e.progressLocked()
	e.cond.Broadcast()
	e.mu.Unlock()
}

// doneLocked counts the entries of batch not in left as done and releases
// their keys. It is called once per request.
func (e *engine) doneLocked(batch, left []*job) {
	if len(left) == len(batch) {
		return
	}
	isLeft := make(map[*job]bool, len(left))
	for _, j := range left {
		isLeft[j] = true
	}
	for _, j := range batch {
		if isLeft[j] {
			continue
		}
		e.stats.Done++
		if e.ordered {
			if e.pending[j.fp]--; e.pending[j.fp] <= 0 {
				delete(e.pending, j.fp)
			}
		}
	}
}

func (e *engine) progressLocked() {
	if e.opts.OnProgress != nil {
		e.opts.OnProgress(e.stats)
	}
}

func (e *engine) failLocked(err error) {
	if e.stopping {
		return
	}
	e.stopping = true
	e.cause = err
	close(e.stopCh)
	e.cond.Broadcast()
}

// backoff is min(max, base·2^stalls).
func backoff(base, max time.Duration, stalls int) time.Duration {
	d := base
	for range stalls {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}

// sleep waits d, or less if ctx ends or stop closes; it reports whether
// the whole wait passed.
func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}

// Throttling error codes. The SDK retries them itself; what reaches the
// engine has exhausted those retries (or the retry quota), and the engine
// retries it with its own backoff.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
}

func isThrottle(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && throttleCodes[ae.ErrorCode()]
}
