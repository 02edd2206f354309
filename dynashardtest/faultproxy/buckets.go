package faultproxy

import (
	"math"
	"time"
)

// keyBuckets is the capacity model of Config: every key has a write and a
// read token bucket of its own.
type keyBuckets struct {
	write, read buckets
}

func newKeyBuckets() *keyBuckets {
	return &keyBuckets{
		write: buckets{m: map[Key]*bucket{}},
		read:  buckets{m: map[Key]*bucket{}},
	}
}

func (kb *keyBuckets) of(kd kind) *buckets {
	if kd == kindWrite {
		return &kb.write
	}
	return &kb.read
}

func (kb *keyBuckets) admit(k pkey, kd kind, now time.Time) bool {
	return kb.of(kd).admit(k.Key, now)
}

func (kb *keyBuckets) charge(k pkey, kd kind, units float64, now time.Time) {
	kb.of(kd).charge(k.Key, units, now)
}

// The per-key model has no tables, stored bytes or per-table counters.
func (kb *keyBuckets) define(tableDef, time.Time)                 {}
func (kb *keyBuckets) store(itemWrite, time.Time)                 {}
func (kb *keyBuckets) snapshot(time.Time) map[TableKey]TableStats { return nil }
func (kb *keyBuckets) resetStats()                                {}

func (kb *keyBuckets) configure(cfg Config, now time.Time) {
	kb.write.configure(cfg.WCU, cfg.WCU*cfg.burstSeconds(), now)
	kb.read.configure(cfg.RCU, cfg.RCU*cfg.burstSeconds(), now)
}

// buckets holds one kind's bucket per key, created on first use.
type buckets struct {
	rate  float64 // units per second; 0 is unlimited and keeps no buckets
	depth float64
	m     map[Key]*bucket
}

// admit reports whether k is unlimited or has a positive balance.
func (bs *buckets) admit(k Key, now time.Time) bool {
	if bs.rate <= 0 {
		return true
	}
	return bs.get(k, now).tokens > 0
}

func (bs *buckets) charge(k Key, units float64, now time.Time) {
	if bs.rate > 0 {
		bs.get(k, now).tokens -= units
	}
}

// configure caps each balance at the new depth: lowering the capacity must
// not leave a key with more credit than it could have saved at the new rate.
// Debt is kept.
func (bs *buckets) configure(rate, depth float64, now time.Time) {
	bs.rate, bs.depth = rate, depth
	for _, b := range bs.m {
		b.tokens = min(b.tokens, depth)
		b.last = now
	}
}

// get returns k's bucket, created full and refilled to now.
func (bs *buckets) get(k Key, now time.Time) *bucket {
	b := bs.m[k]
	if b == nil {
		b = &bucket{tokens: bs.depth, last: now}
		bs.m[k] = b
	}
	b.refill(bs.rate, bs.depth, now)
	return b
}

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
