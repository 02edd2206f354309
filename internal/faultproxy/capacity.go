package faultproxy

import (
	"math"
	"time"
)

// bucket is one key's token bucket. Its balance may go negative: a request
// is admitted while the balance is positive and then charged in full, so a
// unit-heavy item (a 400 KB put at a small rate) still gets through after the
// key has been idle, and the key is then in debt until the refill repays it.
type bucket struct {
	tokens float64
	last   time.Time
}

// refill brings b up to now at rate units per second, capped at depth.
func (b *bucket) refill(rate, depth float64, now time.Time) {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = math.Min(depth, b.tokens+rate*dt)
	}
	b.last = now
}

// get returns k's bucket in m, created full and refilled to now.
func get(m map[Key]*bucket, k Key, rate, depth float64, now time.Time) *bucket {
	b := m[k]
	if b == nil {
		b = &bucket{tokens: depth, last: now}
		m[k] = b
	}
	b.refill(rate, depth, now)
	return b
}

// writeUnits is DynamoDB's write charge: one unit per started KB, at least one.
func writeUnits(size int) float64 {
	return math.Max(1, math.Ceil(float64(size)/1024))
}

// readUnits is DynamoDB's read charge: one unit per started 4 KB, at least
// one, halved for an eventually consistent read.
func readUnits(size int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(size)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// admit reports whether k may use capacity from m: unlimited (rate 0) or a
// positive balance. The caller holds p.mu.
func (p *Proxy) admit(m map[Key]*bucket, k Key, rate float64, now time.Time) bool {
	if rate <= 0 {
		return true
	}
	return get(m, k, rate, rate*p.cfg.burstSeconds(), now).tokens > 0
}

// charge takes units from k's bucket in m and records them. The caller holds
// p.mu.
func (p *Proxy) charge(m map[Key]*bucket, k Key, rate float64, units float64, now time.Time, op string, write bool) {
	if rate > 0 {
		get(m, k, rate, rate*p.cfg.burstSeconds(), now).tokens -= units
	}
	add := func(c *Counters) {
		if write {
			c.WCU += units
		} else {
			c.RCU += units
		}
	}
	p.stats.op(op, add)
	p.stats.key(k, add)
}
