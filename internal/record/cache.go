package record

import (
	"context"
	"errors"
	"sync"
	"time"
)

// viewCache holds, per process, the view of each (database, base, layout
// ID) that matched its record, so that one process sees its own Reshard
// at once whatever client it uses. Concurrent first checks of one key
// share one check (and its requests). It holds at most maxViews entries
// and starts over when full.
type viewCache struct {
	mu       sync.Mutex
	m        map[viewKey]cached
	inflight map[inflightKey]*flight
}

type cached struct {
	v View
	// seen is when this process first saw a pending record of this
	// revision: a pending count becomes the writers' once the fence has
	// passed since (see shard's activateDue).
	seen time.Time
}

type inflightKey struct {
	viewKey
	op string
}

// flight is one check in progress; done is closed when err is set.
type flight struct {
	done chan struct{}
	v    View
	err  error
}

type viewKey struct {
	db, base string // db: Database of the client
	id       ID
}

const maxViews = 1 << 16

var views = &viewCache{m: map[viewKey]cached{}, inflight: map[inflightKey]*flight{}}

func (d Layout) key(db, base string) viewKey {
	return viewKey{db: db, base: base, id: d.ID}
}

// once runs check, or waits for the same check already running for the
// key and shares its result. A waiter's own ctx bounds its wait; a shared
// result that is the running caller's cancellation is not taken: the
// waiter then checks for itself.
func (c *viewCache) once(ctx context.Context, k viewKey, op string, check func() (View, error)) (View, error) {
	ik := inflightKey{k, op}
	for {
		c.mu.Lock()
		f, running := c.inflight[ik]
		if !running {
			f = &flight{done: make(chan struct{}), err: errCheckAbandoned}
			c.inflight[ik] = f
			c.mu.Unlock()
			return c.lead(ik, f, check)
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return View{}, ctx.Err()
		case <-f.done:
		}
		if !errors.Is(f.err, context.Canceled) && !errors.Is(f.err, context.DeadlineExceeded) && f.err != errCheckAbandoned {
			return f.v, f.err
		}
	}
}

// errCheckAbandoned is a flight's result until its check returns, so that
// waiters of a check that panicked check for themselves.
var errCheckAbandoned = errors.New("shard: layout check abandoned")

func (c *viewCache) lead(ik inflightKey, f *flight, check func() (View, error)) (View, error) {
	defer func() {
		c.mu.Lock()
		delete(c.inflight, ik)
		c.mu.Unlock()
		close(f.done)
	}()
	f.v, f.err = check()
	return f.v, f.err
}

// get returns the cached view of k if it is younger than maxAge and
// than the record's own HistoryTTL.
func (c *viewCache) get(k viewKey, maxAge time.Duration) (View, bool) {
	if maxAge <= 0 {
		return View{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, hit := c.m[k]
	if e.v.Recorded {
		maxAge = min(maxAge, e.v.TTL)
	}
	if !hit || time.Since(e.v.At) >= maxAge {
		return View{}, false
	}
	return e.v, true
}

// Newest returns the cached view of base in database db whatever its
// age.
func (d Layout) Newest(db, base string) (View, bool) {
	views.mu.Lock()
	defer views.mu.Unlock()
	e, hit := views.m[d.key(db, base)]
	return e.v, hit
}

// Add caches v as base's view in database db, unless the cache holds a
// view of a later revision read since (records only move forward), and
// returns when this process first saw v's revision.
func (d Layout) Add(db, base string, v View) time.Time {
	k := d.key(db, base)
	views.mu.Lock()
	defer views.mu.Unlock()
	e, hit := views.m[k]
	if hit && e.v.Rev > v.Rev && e.v.At.After(v.At) {
		return v.Since()
	}
	seen := v.Since()
	if hit && e.v.Rev == v.Rev && !e.seen.IsZero() && e.seen.Before(seen) {
		seen = e.seen
	}
	if len(views.m) >= maxViews {
		clear(views.m)
	}
	views.m[k] = cached{v: v, seen: seen}
	return seen
}

// Seen returns when this process first had v's revision of base's record
// in hand: the answer of a read that showed it (or of the write that made
// it), never the moment such a read was sent, which may precede the
// change. A pending count's fence counts from it. v's own if the cache
// holds another revision.
func (d Layout) Seen(db, base string, v View) time.Time {
	views.mu.Lock()
	defer views.mu.Unlock()
	if e, hit := views.m[d.key(db, base)]; hit && e.v.Rev == v.Rev && !e.seen.IsZero() {
		return e.seen
	}
	return v.Since()
}

// Forget drops the cached view of base, so that the next call reads the
// record.
func (d Layout) Forget(db, base string) {
	views.mu.Lock()
	defer views.mu.Unlock()
	delete(views.m, d.key(db, base))
}
