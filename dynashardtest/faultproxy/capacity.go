package faultproxy

import (
	"math"
	"time"
)

// capacityModel decides whether a key may consume capacity and takes what
// it consumed. The proxy asks it to admit a request (or batch entry) before
// forwarding and charges it when the units are known: writes before
// forwarding, reads after. Calls are made with p.mu held, so a model needs no
// lock of its own, and with the proxy's clock, so that tests can freeze it.
//
// keyBuckets is the PerKey model, one token bucket per key;
// partitionModel the Partitioned one, whose partitions many keys share.
// The per-key model needs only the first three methods and ignores the
// others.
type capacityModel interface {
	// admit reports whether k may consume capacity of kind kd (kindWrite
	// or kindRead) at now.
	admit(k pkey, kd kind, now time.Time) bool
	// charge takes units of kind kd from k, admitted or not.
	charge(k pkey, kd kind, units float64, now time.Time)
	// configure adopts cfg's capacity settings at now, keeping what each
	// key has already consumed.
	configure(cfg Config, now time.Time)
	// define adopts a table's capacity as a request the target accepted,
	// or the proxy's own DescribeTable, states it.
	define(d tableDef, now time.Time)
	// store records a write the target applied, for stored bytes.
	store(w itemWrite, now time.Time)
	// snapshot returns the model's tables for Stats; nil if it has none.
	snapshot(now time.Time) map[TableKey]TableStats
	// resetStats zeroes the counters snapshot reports.
	resetStats()
}

// charge takes units of kind kd from k and counts them against op and k,
// whatever the model (the counters report units even when capacity is
// unlimited). The caller holds p.mu.
func (p *Proxy) charge(k pkey, kd kind, units float64, now time.Time, op string) {
	p.capacity.charge(k, kd, units, now)
	add := func(c *Counters) {
		if kd == kindWrite {
			c.WCU += units
		} else {
			c.RCU += units
		}
	}
	p.stats.op(op, add)
	p.stats.key(k.Key, add)
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
