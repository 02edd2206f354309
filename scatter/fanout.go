package scatter

import (
	"context"
	"sync"

	"github.com/dynashard/dynashard/internal/adapt"
	"github.com/dynashard/dynashard/internal/panics"
)

// fanout runs one call's requests, at most lim's limit at once, without a
// dispatcher goroutine: send starts a request at once if the limiter has a
// slot (TryAcquire) and queues it otherwise; receive, which takes a result
// and gives its slot back with what the request saw, starts queued
// requests while the limiter admits them. Only the merging goroutine calls
// send and receive, so a throttled round shrinks the limit before the
// next request starts. A request goroutine is started by a go statement of
// a method with arguments: one allocation per request, where a closure
// handed to a group's Go costs two.
type fanout struct {
	wg          sync.WaitGroup
	lim         *adapt.Limiter
	cut         func(limit int)      // called by receive when a result cut the limit
	do          func(request) result // run in a request goroutine
	results     chan result
	queue       []request
	outstanding int // requests sent and not yet received, queued ones included
}

func (f *fanout) init(n int, lim *adapt.Limiter, cut func(int), do func(request) result) {
	f.do, f.lim, f.cut = do, lim, cut
	f.results = make(chan result, n) // one request per shard at most: sends never block
}

func (f *fanout) send(req request) {
	f.outstanding++
	if len(f.queue) == 0 {
		if t, ok := f.lim.TryAcquire(); ok {
			f.start(req, t)
			return
		}
	}
	f.queue = append(f.queue, req)
}

func (f *fanout) start(req request, t adapt.Ticket) {
	f.wg.Add(1)
	go f.task(req, t)
}

func (f *fanout) task(req request, t adapt.Ticket) {
	defer f.wg.Done()
	res := f.safely(req)
	res.ticket = t
	f.results <- res
}

// safely runs do, turning a panic (in the client) into a result that
// receive panics with again, in the caller's goroutine.
func (f *fanout) safely(req request) (res result) {
	defer panics.Recover(&res.err)
	res.ord = req.ord
	return f.do(req)
}

// receive returns the next result, or ctx's error.
func (f *fanout) receive(ctx context.Context) (result, error) {
	select {
	case res := <-f.results:
		f.outstanding--
		if f.lim.Release(res.ticket, res.signal) && f.cut != nil {
			f.cut(f.lim.Limit())
		}
		panics.Raise(res.err) // before starting queued requests: the call is over
		for len(f.queue) > 0 {
			t, ok := f.lim.TryAcquire()
			if !ok {
				break
			}
			req := f.queue[0]
			f.queue = f.queue[1:]
			f.start(req, t)
		}
		return res, nil
	case <-ctx.Done():
		return result{}, ctx.Err()
	}
}

// wait waits for every request goroutine; cancel their context first.
func (f *fanout) wait() {
	f.queue = nil
	f.wg.Wait()
}

// limiter returns the limiter of a call that may keep up to ceiling
// requests in flight. It starts at the limit the Scatter's earlier calls
// learned (Stats.ConcurrencyLimit) if that is lower: a call right after a
// throttled one does not send a full burst into a table that is still
// throttling, and a stateless handler paging with Page learns across
// pages; learned reports whether it starts there.
func (s *Scatter) limiter(ceiling int) (lim *adapt.Limiter, learned bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := ceiling
	if l := s.stats.ConcurrencyLimit; l > 0 && l < ceiling {
		start, learned = l, true
	}
	return adapt.New(ceiling, start), learned
}

// backedOff records that a call cut its limit to limit.
func (s *Scatter) backedOff(limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Backoffs++
	s.stats.ConcurrencyLimit = limit
	if m := s.stats.MinConcurrencyLimit; m == 0 || limit < m {
		s.stats.MinConcurrencyLimit = limit
	}
}

// settle records where a call's limit ended, for the next call: 0 (no
// constraint) once it is back at the call's ceiling. A call that neither
// backed off nor started from the learned limit (its ceiling was lower)
// learned nothing about it and leaves it. The limit it ended at goes to
// the metrics.
func (s *Scatter) settle(ctx context.Context, lim *adapt.Limiter, started bool) {
	st := lim.Stats()
	s.obs.ConcurrencyLimit(ctx, s.layout.Table, st.Limit)
	if st.Cuts == 0 && !started {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.Limit >= st.Max {
		s.stats.ConcurrencyLimit = 0
	} else {
		s.stats.ConcurrencyLimit = st.Limit
	}
}

// countThrottle counts a Query that failed with a throttling error.
func (s *Scatter) countThrottle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Throttled++
}
