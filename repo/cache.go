package repo

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"

	"github.com/dynashard/dynashard/internal/panics"
)

// CacheStats counts what a Repo's read-through cache did since New, as
// Repo.CacheStats reports it; the zero value is an empty count, and all a
// Repo without a cache reports.
type CacheStats struct {
	// Hits are Gets served from the cache; Misses, Gets that read the
	// table (concurrent misses of one item share one read); Evictions,
	// entries dropped for the bounds or the TTL (not for a write).
	Hits, Misses, Evictions int64
	// Entries and Bytes are what the cache holds now, Bytes weighed as
	// DynamoDB sizes the stored items.
	Entries int
	Bytes   int64
}

// cache is a read-through LRU for point reads, bounded by entries and
// bytes, with a TTL. Concurrent misses on one key share one load.
//
// A load that overlaps a write to any key is not stored: the value it read
// may predate the write. That costs a refill under heavy writes and, as
// long as load reads strongly consistently (an eventually consistent read
// that starts after a write may still return the value before it), never
// serves a value older than the last write through the same repository.
type cache[V any] struct {
	ttl      time.Duration
	maxBytes int64
	now      func() time.Time

	mu    sync.Mutex
	lru   *simplelru.LRU[string, cacheEntry[V]]
	bytes int64
	epoch uint64 // bumped by every invalidation
	quiet bool   // set while invalidating: a removal, not an eviction

	group                   singleflight.Group
	hits, misses, evictions atomic.Int64

	// lookups, if set, is told of every lookup: whether it hit, and the
	// entries it evicted (an expired one it found; those its fill pushed
	// out of the bounds). Set before the cache is used.
	lookups func(ctx context.Context, hit bool, evicted int)
}

type cacheEntry[V any] struct {
	v       V
	size    int64
	expires time.Time
}

func newCache[V any](entries int, maxBytes int64, ttl time.Duration) *cache[V] {
	c := &cache[V]{ttl: ttl, maxBytes: maxBytes, now: time.Now}
	// NewLRU fails only for size <= 0, which the caller rules out.
	c.lru, _ = simplelru.NewLRU(entries, func(_ string, e cacheEntry[V]) {
		c.bytes -= e.size
		if !c.quiet {
			c.evictions.Add(1)
		}
	})
	return c
}

// get returns the cached value for key or loads it. load's size is the
// value's weight against the byte bound. Errors are not cached. The value
// returned is the one stored: a caller that hands it out must copy it.
//
// The shared load runs on a goroutine of its own; a panic in it is raised
// again on the goroutine of every caller waiting for it, never on the
// load's.
func (c *cache[V]) get(ctx context.Context, key string, load func(context.Context) (V, int64, error)) (V, error) {
	c.mu.Lock()
	expired := 0
	if e, ok := c.lru.Get(key); ok {
		if c.now().Before(e.expires) {
			c.mu.Unlock()
			c.hits.Add(1)
			if c.lookups != nil {
				c.lookups(ctx, true, 0)
			}
			return e.v, nil
		}
		c.lru.Remove(key) // expired: counts as an eviction
		expired = 1
	}
	epoch := c.epoch
	c.mu.Unlock()
	c.misses.Add(1)
	// pushed is what this caller's own load evicted filling the cache:
	// written by the load before it answers on ch, read only after.
	pushed := 0

	// The shared load must not die with the first caller's ctx while others
	// wait on it; each caller still returns when its own ctx ends.
	ch := c.group.DoChan(key, func() (any, error) {
		// A load that finished just before this one began has stored the
		// value already; don't read it twice.
		if v, ok := c.fresh(key, epoch); ok {
			return v, nil
		}
		var (
			v    V
			size int64
		)
		err := func() (err error) {
			defer panics.Recover(&err)
			v, size, err = load(context.WithoutCancel(ctx))
			return err
		}()
		if err != nil {
			return v, err
		}
		pushed = c.put(key, v, size, epoch)
		return v, nil
	})
	select {
	case r := <-ch:
		if c.lookups != nil {
			c.lookups(ctx, false, expired+pushed)
		}
		panics.Raise(r.Err)
		if r.Err != nil {
			var zero V
			return zero, r.Err
		}
		return r.Val.(V), nil
	case <-ctx.Done():
		if c.lookups != nil {
			c.lookups(ctx, false, expired) // not pushed: the load may still be running
		}
		var zero V
		return zero, ctx.Err()
	}
}

func (c *cache[V]) fresh(key string, epoch uint64) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.lru.Peek(key); ok && c.epoch == epoch && c.now().Before(e.expires) {
		return e.v, true
	}
	var zero V
	return zero, false
}

// put stores v unless an invalidation came after epoch, and returns the
// entries it evicted to keep within the bounds.
func (c *cache[V]) put(key string, v V, size int64, epoch uint64) (evicted int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch || size > c.maxBytes {
		return 0
	}
	c.quiet = true
	c.lru.Remove(key) // a refill replaces, it does not evict
	c.quiet = false
	before := c.evictions.Load() // only evictions under c.mu change it
	c.lru.Add(key, cacheEntry[V]{v: v, size: size, expires: c.now().Add(c.ttl)})
	c.bytes += size
	for c.bytes > c.maxBytes {
		c.lru.RemoveOldest()
	}
	return int(c.evictions.Load() - before)
}

// invalidate drops key and makes every load in flight skip its store.
func (c *cache[V]) invalidate(key string) {
	c.mu.Lock()
	c.epoch++
	c.quiet = true
	c.lru.Remove(key)
	c.quiet = false
	c.mu.Unlock()
	// Callers arriving after the write start a fresh load instead of joining
	// one that may have read the old value.
	c.group.Forget(key)
}

func (c *cache[V]) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load(),
		Entries: c.lru.Len(), Bytes: c.bytes,
	}
}
