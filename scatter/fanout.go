package scatter

import (
	"context"
	"fmt"
	"runtime/debug"

	"golang.org/x/sync/errgroup"
)

// fanout runs one call's requests, at most limit at once, without a
// dispatcher goroutine: send starts a request at once if a slot is free
// (errgroup's TryGo) and queues it otherwise; receive, which takes a
// result and so frees that request's slot, starts the oldest queued one.
// Only the merging goroutine calls send and receive.
type fanout struct {
	g           errgroup.Group
	do          func(request) result // run in a request goroutine
	results     chan result
	queue       []request
	outstanding int // requests sent and not yet received, queued ones included
}

func (f *fanout) init(n, limit int, do func(request) result) {
	f.do = do
	f.results = make(chan result, n) // one request per shard at most: sends never block
	f.g.SetLimit(limit)
}

func (f *fanout) send(req request) {
	f.outstanding++
	if len(f.queue) > 0 || !f.g.TryGo(f.task(req)) {
		f.queue = append(f.queue, req)
	}
}

func (f *fanout) task(req request) func() error {
	return func() error {
		f.results <- f.safely(req)
		return nil
	}
}

// safely runs do, turning a panic (in the client) into a result that
// receive panics with again, in the caller's goroutine.
func (f *fanout) safely(req request) (res result) {
	defer catchPanic(&res.err)
	res.ord = req.ord
	return f.do(req)
}

// receive returns the next result, or ctx's error.
func (f *fanout) receive(ctx context.Context) (result, error) {
	select {
	case res := <-f.results:
		f.outstanding--
		if len(f.queue) > 0 {
			// The goroutine that sent res is returning: Go waits at most
			// for that.
			req := f.queue[0]
			f.queue = f.queue[1:]
			f.g.Go(f.task(req))
		}
		if p, ok := res.err.(*clientPanic); ok {
			panic(p)
		}
		return res, nil
	case <-ctx.Done():
		return result{}, ctx.Err()
	}
}

// wait waits for every request goroutine; cancel their context first.
func (f *fanout) wait() {
	f.queue = nil
	f.g.Wait()
}

// clientPanic is a panic of the client in a request goroutine, carried to
// the caller's goroutine and raised there again, where it can be
// recovered.
type clientPanic struct {
	value any
	stack []byte
}

// catchPanic, deferred in a request goroutine, turns a panic into a
// *clientPanic in *err.
func catchPanic(err *error) {
	if v := recover(); v != nil {
		*err = &clientPanic{value: v, stack: debug.Stack()}
	}
}

func (p *clientPanic) Error() string {
	return fmt.Sprintf("scatter: panic in Client: %v\n\n%s", p.value, p.stack)
}
