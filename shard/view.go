package shard

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// view is what this process knows of a base's record: the shard-count
// history and whether its last count is still pending (see "Resharding"
// in the package doc), read at a known time. A view is used for at most
// the layout's HistoryTTL after it was read, and every request made
// under it must be done by its deadline.
type view struct {
	shards  []int // oldest first; the last is pending if pending is set
	pending bool
	rev     int
	// ttl and wait are what the record asks of every process (see
	// "Across processes" in the package doc), if recorded is set: the
	// base's HistoryTTL, and the fence its last change asks waiters to
	// wait before acting on it.
	ttl, wait time.Duration
	recorded  bool
	// at is when the read of the record was sent (or the write of it, for
	// the writer's own view): deadlines count from it, the earliest the
	// record can have been as seen. got is when the answer came (zero if
	// unknown): a change the view shows had happened by then, so the fence
	// of a pending count counts from it (see seen).
	at, got time.Time
}

// since is the earliest time v's record is known to have held v's
// content: got, or at when got is unknown.
func (v view) since() time.Time {
	if v.got.IsZero() {
		return v.at
	}
	return v.got
}

// writeN is the count writers use: the newest one that is not pending.
func (v view) writeN() int {
	if v.pending {
		return v.shards[len(v.shards)-2]
	}
	return v.shards[len(v.shards)-1]
}

// trust is how long v may be used after it was read: the stricter of
// l's HistoryTTL and the record's.
func (v view) trust(l Layout) time.Duration {
	if v.recorded {
		return min(l.historyTTL(), v.ttl)
	}
	return l.historyTTL()
}

// deadline is when every request made under v must be done: a Reshard
// waits at least this long after the record changes before anyone writes
// under the next count, so no request of a process that did not see the
// change can land after that.
func (v view) deadline(l Layout) time.Time { return v.at.Add(fenceOf(v.trust(l))) }

// waitFor is how long a process waits after a change of the record
// before acting on it (activating a pending count, sweeping): the longer
// of l's fence and the one the record asks for, so that a process with a
// shorter HistoryTTL than another's still waits for the other's requests.
func (v view) waitFor(l Layout) time.Duration {
	if v.recorded {
		return max(l.fence(), v.wait)
	}
	return l.fence()
}

// fence is how long a change of the record takes to reach every request
// in flight of a process with l's HistoryTTL (see fenceOf).
func (l Layout) fence() time.Duration { return fenceOf(l.historyTTL()) }

// fenceOf is the fence of a HistoryTTL: a view is trusted for ttl, and a
// request made under it may take as long again (at least maxFlightFloor)
// before it is abandoned.
func fenceOf(ttl time.Duration) time.Duration { return ttl + max(ttl, maxFlightFloor) }

// maxFlightFloor is the least time a request is given to complete, so
// that a Layout that caches nothing (HistoryTTL < 0) still lets requests
// run.
const maxFlightFloor = time.Second

// viewCache holds, per process, the view of each (database, table,
// base, layout shape) that matched its record, so that one process sees its own
// Reshard at once whatever client it uses. Concurrent first checks of one
// key share one check (and its requests). It holds at most maxViews
// entries and starts over when full.
type viewCache struct {
	mu       sync.Mutex
	m        map[viewKey]cached
	inflight map[inflightKey]*flight
}

type cached struct {
	v view
	// seen is when this process first saw a pending record of this
	// revision: a pending count becomes the writers' once fence() has
	// passed since (see activateDue).
	seen time.Time
}

type inflightKey struct {
	viewKey
	op string
}

// flight is one check in progress; done is closed when err is set.
type flight struct {
	done chan struct{}
	v    view
	err  error
}

type viewKey struct {
	db, table, base string // db: databaseOf the client
	shape           shapeID
}

// shapeID identifies a layout's shape as Layout.shape writes it, built
// without allocating: every Put, Update, Get and Delete looks the cache
// up. A user's Strategy counts by its dynamic type.
type shapeID struct {
	pk, sk   string
	sortType types.ScalarAttributeType
	sep      string
	strategy reflect.Type
}

func (l Layout) shapeID() shapeID {
	id := shapeID{pk: l.PartitionKey, sep: l.Codec.sep(), strategy: reflect.TypeOf(l.Strategy)}
	if l.SortKey != "" {
		id.sk, id.sortType = l.SortKey, l.sortType()
	}
	return id
}

const maxViews = 1 << 16

var views = &viewCache{m: map[viewKey]cached{}, inflight: map[inflightKey]*flight{}}

func viewKeyOf(db string, l Layout, base string) viewKey {
	return viewKey{db: db, table: l.Table, base: base, shape: l.shapeID()}
}

// once runs check, or waits for the same check already running for the
// key and shares its result. A waiter's own ctx bounds its wait; a shared
// result that is the running caller's cancellation is not taken: the
// waiter then checks for itself.
func (c *viewCache) once(ctx context.Context, db string, l Layout, base, op string, check func() (view, error)) (view, error) {
	ik := inflightKey{viewKeyOf(db, l, base), op}
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
			return view{}, ctx.Err()
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

func (c *viewCache) lead(ik inflightKey, f *flight, check func() (view, error)) (view, error) {
	defer func() {
		c.mu.Lock()
		delete(c.inflight, ik)
		c.mu.Unlock()
		close(f.done)
	}()
	f.v, f.err = check()
	return f.v, f.err
}

// get returns the cached view of base if it is younger than maxAge and
// than the record's own HistoryTTL.
func (c *viewCache) get(db string, l Layout, base string, maxAge time.Duration) (view, bool) {
	if maxAge <= 0 {
		return view{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, hit := c.m[viewKeyOf(db, l, base)]
	if e.v.recorded {
		maxAge = min(maxAge, e.v.ttl)
	}
	if !hit || time.Since(e.v.at) >= maxAge {
		return view{}, false
	}
	return e.v, true
}

// newest returns the cached view of base whatever its age.
func (c *viewCache) newest(db string, l Layout, base string) (view, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, hit := c.m[viewKeyOf(db, l, base)]
	return e.v, hit
}

// add records v, unless the cache holds a view of a later revision read
// since (records only move forward), and returns when this process first
// saw v's revision.
func (c *viewCache) add(db string, l Layout, base string, v view) time.Time {
	k := viewKeyOf(db, l, base)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, hit := c.m[k]
	if hit && e.v.rev > v.rev && e.v.at.After(v.at) {
		return v.since()
	}
	seen := v.since()
	if hit && e.v.rev == v.rev && !e.seen.IsZero() && e.seen.Before(seen) {
		seen = e.seen
	}
	if len(c.m) >= maxViews {
		clear(c.m)
	}
	c.m[k] = cached{v: v, seen: seen}
	return seen
}

// seen returns when this process first had v's revision of base's record
// in hand: the answer of a read that showed it (or of the write that made
// it), never the moment such a read was sent, which may precede the
// change. A pending count's fence counts from it. v's own if the cache
// holds another revision.
func (c *viewCache) seen(db string, l Layout, base string, v view) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, hit := c.m[viewKeyOf(db, l, base)]; hit && e.v.rev == v.rev && !e.seen.IsZero() {
		return e.seen
	}
	return v.since()
}

// forget drops the cached view of base, so that the next call reads the
// record.
func (c *viewCache) forget(db string, l Layout, base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, viewKeyOf(db, l, base))
}

// keysOf returns the distinct physical keys that may hold (base, id) under
// v, the writers' key first, then the others newest count first.
func (v view) keysOf(l Layout, base, id string, physical func(Strategy) (string, error)) ([]string, error) {
	order := make([]int, 0, len(v.shards))
	order = append(order, v.writeN())
	for i := len(v.shards) - 1; i >= 0; i-- {
		order = append(order, v.shards[i])
	}
	keys := make([]string, 0, len(order))
	for _, n := range order {
		s, err := withN(l.Strategy, n)
		if err != nil {
			return nil, err
		}
		pk, err := physical(s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(keys, pk) {
			keys = append(keys, pk)
		}
	}
	return keys, nil
}
