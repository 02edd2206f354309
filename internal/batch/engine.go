package batch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	bo "github.com/dynashard/dynashard/internal/backoff"
)

// outcome is what one request did.
type outcome struct {
	left     []*job // entries returned unprocessed
	late     []*job // entries the client gave up on (PartialError.Unknown)
	why      error  // why it gave up on them
	items    []Item // items read
	attempts int
	unsure   bool  // an attempt may have been applied: so may the entries not done
	settled  bool  // left and late are exact even with err (PartialError)
	err      error // the request failed; unless settled, no entry is known to be done
}

type sender func(ctx context.Context, batch []*job) outcome

// engine runs one call: workers take requests built from leftovers first,
// then entries parked for their key's pace, then fresh entries, send them,
// and put leftovers back (build.go, pace.go). All state below mu
// is guarded by it.
//
// Rounds belong to the whole engine, not to a worker: the first response of
// the current round that made no progress ends the round, counts one stall
// and closes the gate, and no worker sends anything (fresh or leftover)
// until the gate opens after the backoff. Responses to requests sent before
// that are of an older round and count nothing, so the time the engine
// backs off, and the time before it gives up, do not depend on how many
// requests it has in flight.
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

	mu           sync.Mutex
	cond         sync.Cond
	queue        []*job            // leftovers ready to be sent again
	peek         *job              // a pulled entry that did not fit the last request
	held         map[string][]*job // pulled entries waiting for their key, per key in pull order
	ready        []*job            // held entries whose key became free
	waiting      int               // entries in held and ready
	pending      map[string]int    // keys pulled and not done (ordered only)
	maxWaiting   int               // bound on entries in held, ready and parked
	waitingBytes int64             // wire bytes of held and ready entries
	maxWaitBytes int64             // bound on the wire bytes of held, ready and parked
	pace         *pacer            // per-partition-key pacing
	wake         time.Time         // when a worker with nothing to send looks again (pacing)
	exhausted    bool              // pull has nothing more
	outstanding  int               // requests in flight or backing off
	stalls       int               // consecutive rounds without progress
	why          error             // why entries were abandoned since the last progress
	refused      bool              // a response since the last progress left entries or was throttled
	lateRounds   int               // rounds of abandoned requests since the last progress
	lateAt       time.Time         // when the last such round ended
	round        int               // bumped whenever a round ends
	gate         time.Time         // nothing is sent before it
	lastProgress time.Time
	stopping     bool
	stopCh       chan struct{} // closed when stopping, to cut waits short
	cause        error
	panicked     *pullPanic
	undone       []*job
	items        []Item
	stats        Stats
}

// pullPanic carries a panic of the caller's sequence, client or
// OnProgress out of a worker, to be raised again in the caller's
// goroutine.
type pullPanic struct{ value any }

var errPullPanic = errors.New("batch: the input sequence panicked")

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
	// The input is in memory already: entries waiting for their key cost
	// nothing more, so a throttled key never stops the others being read.
	e.maxWaiting, e.maxWaitBytes = math.MaxInt, math.MaxInt64
}

func newEngine(opts Options, send sender, maxCount int, maxBytes int64, sizeDriven bool) *engine {
	e := &engine{
		opts: opts, send: send, maxCount: maxCount, maxBytes: maxBytes, sizeDriven: sizeDriven,
		sem:        semaphore.NewWeighted(opts.MaxInFlightBytes),
		held:       map[string][]*job{},
		pending:    map[string]int{},
		maxWaiting: opts.MaxWaiting, maxWaitBytes: opts.MaxWaitingBytes,
		pace:   newPacer(opts),
		stopCh: make(chan struct{}),
	}
	e.cond.L = &e.mu
	return e
}

// run drives the call to its end and returns the entries not done, in
// input order, with the cause. Every goroutine it starts has ended when it
// returns. A panic of the input sequence, of the client or of OnProgress is
// raised again here, in the caller's goroutine, once the requests in
// flight have ended.
func (e *engine) run(ctx context.Context) ([]*job, error) {
	e.lastProgress = time.Now()
	cancelled := make(chan struct{})
	stopWatch := context.AfterFunc(ctx, func() {
		defer close(cancelled)
		e.mu.Lock()
		e.failLocked(ctx.Err())
		e.mu.Unlock()
	})
	var g errgroup.Group
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
	if e.panicked != nil {
		panic(e.panicked.value)
	}
	return e.leftovers()
}

// leftovers collects every entry not done, in input order.
func (e *engine) leftovers() ([]*job, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats.KeyRates = e.pace.rates()
	left := append(e.undone, e.queue...)
	if e.peek != nil {
		left = append(left, e.peek)
	}
	left = append(left, e.ready...)
	left = append(left, e.pace.all()...)
	for _, js := range e.held {
		left = append(left, js...)
	}
	if e.rest != nil {
		left = append(left, e.rest()...)
	}
	slices.SortFunc(left, func(a, b *job) int { return a.seq - b.seq })
	return left, e.cause
}

func (e *engine) worker(ctx context.Context) {
	for {
		batch, round, ok := e.next(ctx)
		if !ok {
			return
		}
		sentAt := time.Now()
		out := e.sendOne(ctx, batch)
		left, delay, again := e.record(ctx, batch, round, sentAt, out)
		if again {
			slept := sleep(ctx, e.stopCh, delay)
			e.requeue(ctx, left, slept)
		}
	}
}

// next blocks until there is a request to send and the gate is open, or
// returns false when the call is over for this worker.
func (e *engine) next(ctx context.Context) ([]*job, int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for !e.stopping {
		if wait := time.Until(e.gate); wait > 0 {
			e.mu.Unlock()
			sleep(ctx, e.stopCh, wait)
			e.mu.Lock()
			continue
		}
		if batch := e.buildLocked(); len(batch) > 0 {
			e.outstanding++
			e.stats.Requests++
			return batch, e.round, true
		}
		if e.finishedLocked() {
			e.cond.Broadcast() // wake the other idle workers so they end too
			break
		}
		e.waitLocked()
	}
	return nil, 0, false
}

// waitLocked waits for a change, or until the time buildLocked set for
// parked entries to be able to go.
func (e *engine) waitLocked() {
	if e.wake.IsZero() {
		e.cond.Wait()
		return
	}
	t := time.AfterFunc(time.Until(e.wake), func() {
		e.mu.Lock()
		e.cond.Broadcast()
		e.mu.Unlock()
	})
	e.cond.Wait()
	t.Stop()
}

func (e *engine) finishedLocked() bool {
	return e.stopping || e.exhausted && e.waiting == 0 && e.pace.parked == 0 && e.peek == nil && len(e.queue) == 0 && e.outstanding == 0
}

// sendOne sends one request within the in-flight byte bound. A panic of
// the client is kept, fails the call, and is raised again in the caller's
// goroutine by run.
func (e *engine) sendOne(ctx context.Context, batch []*job) (out outcome) {
	var weight int64 = requestOverhead
	for _, j := range batch {
		weight += j.wire
	}
	weight = min(weight, e.opts.MaxInFlightBytes)
	if err := e.sem.Acquire(ctx, weight); err != nil {
		return outcome{err: err}
	}
	defer e.sem.Release(weight)
	defer func() {
		if v := recover(); v != nil {
			e.mu.Lock()
			if e.panicked == nil {
				e.panicked = &pullPanic{value: v}
			}
			e.mu.Unlock()
			out = outcome{err: errClientPanic, unsure: true}
		}
	}()
	return e.send(ctx, batch)
}

var errClientPanic = errors.New("batch: the client panicked")

// record records the outcome of a request. When entries are to be sent
// again after a wait it returns them with the time to wait; otherwise the
// request is finished. Entries the client abandoned go back to the queue
// at once: that is neither progress nor a stall.
func (e *engine) record(ctx context.Context, batch []*job, round int, sentAt time.Time, out outcome) (left []*job, delay time.Duration, again bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.progressLocked()
	e.stats.Attempts += out.attempts
	e.items = append(e.items, out.items...)
	left, late := out.left, out.late
	if out.err != nil && !out.settled {
		left = batch
	}
	markUnsure(late, true)
	markUnsure(left, out.unsure)
	if out.err != nil {
		if ctx.Err() != nil || !isThrottle(out.err) {
			e.pace.observe(batch, nil, false, sentAt, time.Now())
			e.failLocked(cmpOr(ctx.Err(), out.err))
			e.finishLocked(batch, append(slices.Clip(left), late...))
			return nil, 0, false
		}
		e.stats.Throttled++
	}
	rest := batch
	if len(late) > 0 {
		e.stats.Abandoned += len(late)
		e.why = out.why
		e.pace.observe(late, nil, false, sentAt, time.Now()) // they teach nothing of their keys
		rest = slices.DeleteFunc(slices.Clone(batch), func(j *job) bool { return slices.Contains(late, j) })
	}
	progress := len(left) < len(rest)
	e.learnLocked(rest, left, progress || round != e.round, sentAt)
	var err error
	if progress || len(left) > 0 {
		err = e.roundLocked(progress, round)
	} else {
		err = e.lateLocked(sentAt)
	}
	if err != nil {
		e.failLocked(err)
	}
	if len(left) > 0 {
		e.stats.UnprocessedRounds++
	}
	notDone := append(slices.Clip(left), late...)
	if len(notDone) == 0 || e.stopping {
		e.finishLocked(batch, notDone)
		return nil, 0, false
	}
	if len(left) > 0 && e.budgetSpentLocked() {
		e.failLocked(ErrRetryBudget)
		e.finishLocked(batch, notDone)
		return nil, 0, false
	}
	e.doneLocked(batch, notDone)
	if len(late) > 0 {
		e.queue = append(e.queue, e.parkLocked(late, 0)...)
		e.cond.Broadcast()
	}
	if progress && !e.sizeDriven {
		// Leftovers after progress wait a little on their own; a stalled
		// round's wait is the gate's, shared by every worker.
		delay = e.opts.jitter(e.opts.BaseDelay)
	}
	// A paced key's leftovers wait in its park, with the key held back
	// for the same backoff, and the worker goes on with other keys.
	if left = e.parkLocked(left, delay); len(left) == 0 {
		e.outstanding--
		e.cond.Broadcast()
		return nil, 0, false
	}
	return left, delay, true
}

// markUnsure marks js as sent in a request whose outcome is unknown.
func markUnsure(js []*job, unsure bool) {
	if !unsure {
		return
	}
	for _, j := range js {
		j.unsure = true
	}
}

// roundLocked applies the round rule to a response and reports ErrStalled
// when nothing has been done for StallTimeout.
func (e *engine) roundLocked(progress bool, round int) error {
	now := time.Now()
	if progress {
		e.stalls = 0
		e.why, e.refused, e.lateRounds = nil, false, 0
		e.round++
		e.gate = time.Time{}
		e.lastProgress = now
		return nil
	}
	e.refused = true
	if round != e.round {
		return nil // the round this request was sent in has already ended
	}
	if now.Sub(e.lastProgress) >= e.opts.StallTimeout {
		return e.stalledLocked()
	}
	e.stalls++
	e.round++
	e.gate = now.Add(e.opts.jitter(backoff(e.opts.BaseDelay, e.opts.MaxDelay, e.stalls)))
	return nil
}

// lateLocked applies the rule for a response whose entries were all
// abandoned by the client (sent at sentAt): it is no stall, but once
// nothing has been done for StallTimeout, and entries were abandoned in
// two rounds at least (each entry had a second chance), the call gives
// up.
func (e *engine) lateLocked(sentAt time.Time) error {
	now := time.Now()
	if sentAt.After(e.lateAt) { // sent after the last round of them ended
		e.lateRounds++
		e.lateAt = now
	}
	if e.lateRounds >= 2 && now.Sub(e.lastProgress) >= e.opts.StallTimeout {
		return e.stalledLocked()
	}
	return nil
}

// stalledLocked is the error of a call in which nothing was done for
// StallTimeout: ErrStalled if entries were left or throttled since the
// last progress, wrapping the cause of abandoned requests if any were
// abandoned; that cause alone if nothing else happened.
func (e *engine) stalledLocked() error {
	switch {
	case e.why == nil:
		return ErrStalled
	case e.refused:
		return fmt.Errorf("%w; requests were abandoned too: %w", ErrStalled, e.why)
	}
	return fmt.Errorf("batch: nothing done for %v (StallTimeout): %w", e.opts.StallTimeout, e.why)
}

// requeue puts leftovers back after their wait. A wait cut short means the
// call is stopping; the leftovers are then reported from the queue.
func (e *engine) requeue(ctx context.Context, left []*job, slept bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slept && ctx.Err() != nil {
		e.failLocked(ctx.Err())
	}
	left = e.parkLocked(left, 0)
	e.queue = append(e.queue, left...)
	e.outstanding--
	e.cond.Broadcast()
}

// finishLocked ends a request whose leftovers will not be sent again.
func (e *engine) finishLocked(batch, left []*job) {
	e.doneLocked(batch, left)
	e.undone = append(e.undone, left...)
	e.outstanding--
	e.cond.Broadcast()
}

// doneLocked counts the entries of batch not in left as done and releases
// their keys, handing a key to the next entry held for it. It is called
// once per request.
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
			e.releaseLocked(j.fp)
		}
	}
}

func (e *engine) releaseLocked(fp string) {
	if e.pending[fp]--; e.pending[fp] > 0 {
		return
	}
	delete(e.pending, fp)
	if hs := e.held[fp]; len(hs) > 0 {
		e.ready = append(e.ready, hs[0])
		e.pending[fp]++
		if len(hs) == 1 {
			delete(e.held, fp)
		} else {
			e.held[fp] = hs[1:]
		}
	}
}

// progressLocked calls OnProgress, on a worker's goroutine. A panic in it
// is kept and fails the call, as a panic of the client does, and run
// raises it again in the caller's goroutine; once a panic is kept,
// OnProgress is not called again.
func (e *engine) progressLocked() {
	if e.opts.OnProgress == nil || e.panicked != nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			e.panicked = &pullPanic{value: v}
			e.failLocked(errProgressPanic)
		}
	}()
	e.opts.OnProgress(e.stats)
}

var errProgressPanic = errors.New("batch: OnProgress panicked")

func (e *engine) failLocked(err error) {
	if e.stopping {
		return
	}
	e.stopping = true
	e.cause = err
	close(e.stopCh)
	e.cond.Broadcast()
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func backoff(base, max time.Duration, stalls int) time.Duration {
	return bo.Cap(base, max, stalls)
}

func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	return bo.Sleep(ctx, stop, d)
}

func isThrottle(err error) bool { return bo.IsThrottle(err) }
