package faultproxy

import (
	"maps"
	"time"

	"github.com/dynashard/dynashard/partition"
)

// partitionModel is the capacity model of Config.Model = Partitioned. Every
// table and global secondary index has a partition.Layout; a partition-key
// value falls on the partition whose range holds its hash; each partition
// has, per kind (reads, writes), a bucket of its own throughput holding
// BurstWindow of it and a bucket capping it at the per-partition maximum
// over one second; each table has a bucket of its whole throughput over one
// second, from which adaptive capacity lends. All of it runs on simulated
// time (simClock). The package doc states the model for users.
type partitionModel struct {
	set    partitionSettings
	clock  simClock
	tables map[TableKey]*tableState
	items  map[string]map[string]storedItem // table -> item id -> item
	fixed  map[TableKey]Throughput          // Config.Partition.Tables
}

func newPartitionModel() *partitionModel {
	return &partitionModel{
		tables: map[TableKey]*tableState{},
		items:  map[string]map[string]storedItem{},
		fixed:  map[TableKey]Throughput{},
	}
}

// Slots index per-kind state: writes and reads.
const (
	slotWrite = iota
	slotRead
)

func slot(kd kind) int {
	if kd == kindRead {
		return slotRead
	}
	return slotWrite
}

// maxRate is DynamoDB's per-partition maximum of a slot's kind.
func maxRate(s int) float64 {
	if s == slotRead {
		return partition.PartitionRCU
	}
	return partition.PartitionWCU
}

// tableState is one table's (or global index's) partitions.
type tableState struct {
	tp     Throughput
	layout partition.Layout
	parts  []*partState
	pool   [2]bucket // the whole table's throughput over one second, by slot
}

type partState struct {
	bytes int64 // stored bytes of the items on the partition
	k     [2]kindState
}

// kindState is one partition's capacity of one kind.
type kindState struct {
	own      bucket    // its throughput, holding BurstWindow of it
	peak     bucket    // the per-partition maximum, holding one second of it
	hotSince time.Time // start of the current throttling episode; zero: none
	usage    Usage
}

// rate is partition i's throughput of slot s: its share of the table's, or
// the per-partition maximum on demand.
func (t *tableState) rate(i, s int) float64 {
	switch {
	case t.tp.OnDemand:
		return maxRate(s)
	case s == slotRead:
		return t.layout.Partitions[i].RCU
	}
	return t.layout.Partitions[i].WCU
}

// poolRate is what adaptive capacity may lend from: the table's provisioned
// throughput (nothing on demand, where every partition has its maximum).
func (t *tableState) poolRate(s int) float64 {
	switch {
	case t.tp.OnDemand:
		return 0
	case s == slotRead:
		return t.tp.RCU
	}
	return t.tp.WCU
}

// simClock is the model's clock: simulated time runs scale times as fast as
// the proxy's clock, from the moment the scale was last set.
type simClock struct {
	real, sim time.Time
	scale     float64
}

func (c simClock) at(now time.Time) time.Time {
	return c.sim.Add(time.Duration(float64(now.Sub(c.real)) * c.scale))
}

func (c *simClock) rescale(now time.Time, scale float64) {
	if c.real.IsZero() {
		c.real, c.sim = now, now
	}
	c.sim, c.real, c.scale = c.at(now), now, scale
}

// locate returns k's table and partition, or nil for a table the model does
// not know, which is not limited.
func (m *partitionModel) locate(k pkey) (*tableState, int) {
	t := m.tables[TableKey{Table: k.Table, Index: k.Index}]
	if t == nil {
		return nil, -1
	}
	i := t.layout.Find(k.hash)
	if i < 0 {
		return nil, -1
	}
	return t, i
}

// refresh refills partition i's buckets of slot s and the table's to sim,
// and ends the partition's throttling episode once its own bucket is full
// again: it has been below its share for a whole burst window's worth.
func (m *partitionModel) refresh(t *tableState, i, s int, sim time.Time) *kindState {
	ks := &t.parts[i].k[s]
	r := t.rate(i, s)
	ks.own.refill(r, r*m.set.burst, sim)
	ks.peak.refill(maxRate(s), maxRate(s), sim)
	t.pool[s].refill(t.poolRate(s), t.poolRate(s), sim)
	if ks.own.tokens >= r*m.set.burst {
		ks.hotSince = time.Time{}
	}
	return ks
}

// admit admits a request on k's partition while the partition is under its
// per-partition maximum and has capacity of its own (burst included) or
// adaptive capacity lends it some; a request finding its own capacity spent
// starts (or continues) the partition's throttling episode.
func (m *partitionModel) admit(k pkey, kd kind, now time.Time) bool {
	t, i := m.locate(k)
	if t == nil {
		return true
	}
	sim, s := m.clock.at(now), slot(kd)
	ks := m.refresh(t, i, s, sim)
	if ks.peak.tokens > 0 {
		if ks.own.tokens > 0 {
			return true
		}
		if ks.hotSince.IsZero() {
			ks.hotSince = sim
		}
		if m.lends(t, ks, s, sim) {
			return true
		}
	}
	ks.usage.Throttled++
	return false
}

// lends reports whether adaptive capacity lends a partition in a throttling
// episode the table's unused throughput now.
func (m *partitionModel) lends(t *tableState, ks *kindState, s int, sim time.Time) bool {
	if ks.hotSince.IsZero() || t.pool[s].tokens <= 0 {
		return false
	}
	switch m.set.adaptive {
	case AdaptiveInstant:
		return true
	case AdaptiveDelayed:
		return sim.Sub(ks.hotSince) >= m.set.delay
	}
	return false
}

// charge takes units from k's partition, its maximum and its table. What
// the partition's own bucket cannot pay is borrowed when adaptive capacity
// lends, else owed (the balance goes negative, as in the per-key model).
func (m *partitionModel) charge(k pkey, kd kind, units float64, now time.Time) {
	t, i := m.locate(k)
	if t == nil {
		return
	}
	sim, s := m.clock.at(now), slot(kd)
	ks := m.refresh(t, i, s, sim)
	own := units
	if ks.own.tokens < units && m.lends(t, ks, s, sim) {
		own = max(0, ks.own.tokens)
	}
	ks.own.tokens -= own
	ks.peak.tokens -= units
	// The pool measures the table's last second: consumption above the
	// table's throughput (bursts) leaves at most a second of debt.
	t.pool[s].tokens = max(t.pool[s].tokens-units, -t.poolRate(s))
	ks.usage.Units += units
	ks.usage.Borrowed += units - own
}

// configure adopts cfg's partition settings and tables. Every table is laid
// out again, so that new figures (a throughput in Tables, a smaller
// PartitionSize, a shorter BurstWindow) apply to what the model holds.
func (m *partitionModel) configure(cfg Config, now time.Time) {
	m.set = cfg.Partition.settings()
	m.clock.rescale(now, m.set.scale)
	sim := m.clock.at(now)
	m.fixed = maps.Clone(cfg.Partition.Tables)
	if m.fixed == nil {
		m.fixed = map[TableKey]Throughput{}
	}
	for k, tp := range m.fixed {
		m.apply(k, tp, sim)
	}
	for k, t := range m.tables {
		if _, ok := m.fixed[k]; !ok {
			m.apply(k, t.tp, sim)
		}
	}
}

func (m *partitionModel) snapshot(time.Time) map[TableKey]TableStats {
	out := make(map[TableKey]TableStats, len(m.tables))
	for k, t := range m.tables {
		out[k] = t.stats()
	}
	return out
}

func (t *tableState) stats() TableStats {
	ts := TableStats{Throughput: t.tp, Partitions: make([]PartitionStats, len(t.parts))}
	for i, p := range t.parts {
		ts.Partitions[i] = PartitionStats{
			Range: t.layout.Ranges[i], RCU: t.rate(i, slotRead), WCU: t.rate(i, slotWrite),
			Bytes: p.bytes, Read: p.k[slotRead].usage, Write: p.k[slotWrite].usage,
		}
	}
	return ts
}

func (m *partitionModel) resetStats() {
	for _, t := range m.tables {
		for _, p := range t.parts {
			p.k[slotRead].usage, p.k[slotWrite].usage = Usage{}, Usage{}
		}
	}
}
