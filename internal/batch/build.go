package batch

import (
	"slices"
	"time"
)

// What goes into the next request, and where entries wait meanwhile.

// buildLocked takes leftovers of keys not paced first, then parked
// entries whose keys may go, then fresh entries, up to the request limits.
// Folding leftovers into a request with fresh entries keeps requests full
// instead of resending a few entries at a time. When it returns nothing
// because every waiting entry waits for its key's pace, e.wake says when
// to look again.
func (e *engine) buildLocked() []*job {
	now := time.Now()
	e.wake = time.Time{}
	var batch []*job
	size := int64(requestOverhead)
	fits := func(j *job) bool {
		return len(batch) == 0 || e.maxBytes == 0 || size+j.wire <= e.maxBytes
	}
	accept := func(j *job) bool {
		if len(batch) == e.maxCount || !fits(j) {
			return false
		}
		batch = append(batch, j)
		size += j.wire
		return true
	}
	for len(e.queue) > 0 && accept(e.queue[0]) {
		e.pace.charge(e.queue[0], now)
		e.queue = e.queue[1:]
	}
	// A request of paced entries alone waits a little to be filled while
	// others are in flight, rather than go out with the few that may go.
	linger := false
	var full time.Time
	if e.pace.parked > 0 {
		var n int
		var oldest time.Duration
		n, oldest, full = e.pace.ready(now, e.maxCount-len(batch))
		linger = len(batch) == 0 && n < e.maxCount && e.outstanding > 0 && oldest < paceLinger
		if !linger {
			e.pace.take(now, accept)
		} else if full.IsZero() || full.After(now.Add(paceLinger-oldest)) {
			full = now.Add(paceLinger - oldest)
		}
	}
	if slices.ContainsFunc(batch, func(j *job) bool { return j.retried }) && e.budgetSpentLocked() {
		e.unbuildLocked(batch)
		e.failLocked(ErrRetryBudget)
		return nil
	}
	for len(batch) < e.maxCount {
		j, checked := e.freshLocked(now)
		if j == nil {
			break
		}
		if !fits(j) {
			e.peek = j
			break
		}
		if !checked {
			e.pace.charge(j, now)
		}
		batch = append(batch, j)
		size += j.wire
	}
	if linger && len(batch) > 0 {
		e.pace.take(now, accept) // it goes anyway: fill it
	}
	if e.stopping {
		e.unbuildLocked(batch)
		return nil
	}
	if len(batch) == 0 && e.pace.parked > 0 {
		e.wake = full
	}
	if slices.ContainsFunc(batch, func(j *job) bool { return j.retried }) {
		e.stats.Retries++
	}
	return batch
}

// unbuildLocked returns the entries of a request that will not be sent to
// the queue, where leftovers finds them.
func (e *engine) unbuildLocked(batch []*job) {
	for _, j := range batch {
		e.pace.uncharge(j)
	}
	e.queue = append(batch, e.queue...)
}

func (e *engine) budgetSpentLocked() bool {
	b := e.opts.RetryBudget
	return b < 0 || b > 0 && e.stats.Retries >= b
}

// freshLocked returns the next entry never sent, or nil if none can go
// now, and whether it is charged to its key already. An entry whose key is
// still in progress (ordered only) waits in held, and one whose key has no
// allowance left waits in its key's park, while pulling goes on, up to
// maxWaiting entries in all.
func (e *engine) freshLocked(now time.Time) (*job, bool) {
	if j := e.peek; j != nil {
		e.peek = nil
		return j, true
	}
	for len(e.ready) > 0 {
		j := e.ready[0]
		e.ready = e.ready[1:]
		e.waiting--
		e.waitingBytes -= j.wire
		if e.mayLocked(j, now) {
			return j, false
		}
	}
	for !e.exhausted && !e.stopping && e.waiting+e.pace.parked < e.maxWaiting &&
		e.waitingBytes+e.pace.parkedBytes < e.maxWaitBytes {
		j := e.pullLocked()
		if j == nil {
			return nil, false
		}
		if e.ordered && e.pending[j.fp] > 0 {
			e.held[j.fp] = append(e.held[j.fp], j)
			e.waiting++
			e.waitingBytes += j.wire
			continue
		}
		if e.ordered {
			e.pending[j.fp]++
		}
		if e.mayLocked(j, now) {
			return j, false
		}
	}
	return nil, false
}

// mayLocked reports whether j's key lets it go now, and parks it if not.
func (e *engine) mayLocked(j *job, now time.Time) bool {
	k := e.pace.of(j)
	if k == nil || k.may(now) {
		return true
	}
	e.pace.park(k, j, false)
	e.stats.Paced++
	return false
}

// pullLocked pulls one entry; at the end of the input, on an invalid entry
// or on a panic of the input it marks the input exhausted and returns nil.
func (e *engine) pullLocked() (j *job) {
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				e.panicked = &pullPanic{value: v}
				j, err = nil, errPullPanic
			}
		}()
		j, err = e.pull()
	}()
	if err != nil {
		if j != nil {
			e.undone = append(e.undone, j)
		}
		e.exhausted = true
		e.failLocked(err)
		return nil
	}
	if j == nil {
		e.exhausted = true
	}
	return j
}

// parkLocked parks the entries of left whose keys are paced, after holding
// their keys back for delay, and returns the others.
func (e *engine) parkLocked(left []*job, delay time.Duration) []*job {
	now := time.Now()
	rest := left[:0:0]
	for i := len(left) - 1; i >= 0; i-- {
		k := e.pace.of(left[i])
		if k == nil || e.stopping {
			rest = append(rest, left[i])
			continue
		}
		k.hold(now.Add(delay))
		if !k.may(now) {
			e.stats.Paced++
		}
		e.pace.park(k, left[i], true)
	}
	slices.Reverse(rest)
	return rest
}

// learnLocked tells the pacer what a request did. A response that did
// nothing in a round where nothing else did either (a stalled round) says
// nothing of its keys: the engine-wide backoff answers it, and an outage
// leaves every key's estimate as it was.
func (e *engine) learnLocked(batch, left []*job, learn bool, sentAt time.Time) {
	var isLeft map[*job]bool
	if len(left) > 0 {
		isLeft = make(map[*job]bool, len(left))
		for _, j := range left {
			isLeft[j] = true
			j.retried = true
		}
	}
	e.pace.observe(batch, isLeft, learn, sentAt, time.Now())
}
