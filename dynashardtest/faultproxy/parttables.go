package faultproxy

import (
	"time"

	"github.com/dynashard/dynashard/partition"
)

// define adopts the capacity d states: a table created, updated or deleted
// through the proxy, or described by the proxy's own DescribeTable.
func (m *partitionModel) define(d tableDef, now time.Time) {
	sim := m.clock.at(now)
	if d.dropped {
		m.drop(d.table, sim)
		return
	}
	m.adopt(TableKey{Table: d.table}, d.base, d.described, sim)
	for idx, tp := range d.indexes {
		m.adopt(TableKey{Table: d.table, Index: idx}, tp, d.described, sim)
	}
	if d.base != nil && d.base.OnDemand && !d.described {
		// Switching a table to on demand switches its indexes.
		for k := range m.tables {
			if _, named := d.indexes[k.Index]; k.Table == d.table && k.Index != "" && !named {
				m.adopt(k, d.base, false, sim)
			}
		}
	}
}

// adopt gives table k the throughput tp, unless Config sets k, or tp is a
// DescribeTable's and k is known already. A nil tp deletes an index and
// leaves a table unchanged.
func (m *partitionModel) adopt(k TableKey, tp *Throughput, described bool, sim time.Time) {
	_, fixed := m.fixed[k]
	switch {
	case fixed || described && m.tables[k] != nil:
	case tp != nil:
		m.apply(k, *tp, sim)
	case k.Index != "":
		delete(m.tables, k)
	}
}

// drop forgets a deleted table, its indexes and its items. A table Config
// sets starts again from its configured throughput.
func (m *partitionModel) drop(table string, sim time.Time) {
	delete(m.items, table)
	for k := range m.tables {
		if k.Table == table {
			delete(m.tables, k)
		}
	}
	for k, tp := range m.fixed {
		if k.Table == table {
			m.apply(k, tp, sim)
		}
	}
}

// apply gives table k the throughput tp as the guide describes: a new table
// gets NewLayout (on demand: one partition, split by size); a known one is
// provisioned anew, its partitions doubling when tp needs more and never
// merging; a switch to on demand, or the throughput it has already, keeps
// the partitions and their shares. Partitions holding more than
// PartitionSize then split. Figures the partition package refuses (as
// DynamoDB would) leave the table as it was.
func (m *partitionModel) apply(k TableKey, tp Throughput, sim time.Time) {
	old := m.tables[k]
	var l partition.Layout
	var err error
	switch {
	case old == nil && tp.OnDemand:
		l, err = partition.NewLayout(0, 0, 0)
	case old == nil:
		l, err = partition.NewLayout(tp.RCU, tp.WCU, 0)
	case tp.OnDemand || tp == old.tp:
		l = old.layout
	default:
		l, err = old.layout.Provision(tp.RCU, tp.WCU)
	}
	if err != nil {
		return
	}
	t := m.relayout(k, old, tp, l, sim)
	for i := range t.parts {
		m.splitFull(k, i, sim)
	}
}

// relayout installs layout l with throughput tp as table k. Each partition
// inherits from the old partition that held its range (its parent): the
// parent's saved capacity in proportion to the range it takes, capped at
// its own new burst depth; the parent's use of its maximum and its
// throttling episode; and its counters when it is the same partition.
func (m *partitionModel) relayout(k TableKey, old *tableState, tp Throughput, l partition.Layout, sim time.Time) *tableState {
	t := &tableState{tp: tp, layout: l, parts: make([]*partState, l.Len())}
	for s := range t.pool {
		t.pool[s] = bucket{tokens: t.poolRate(s), last: sim}
		if old != nil {
			old.pool[s].refill(old.poolRate(s), old.poolRate(s), sim)
			t.pool[s].tokens = min(t.pool[s].tokens, old.pool[s].tokens)
		}
	}
	for i, r := range l.Ranges {
		t.parts[i] = m.inherit(old, t, i, r, sim)
	}
	m.recount(k, t)
	m.tables[k] = t
	return t
}

// inherit builds partition i of t, holding range r, from its parent in old
// (nil for a new table: full buckets).
func (m *partitionModel) inherit(old, t *tableState, i int, r partition.Range, sim time.Time) *partState {
	p := &partState{}
	j := -1
	if old != nil {
		j = old.layout.Find(r.Start)
	}
	for s := range p.k {
		depth := t.rate(i, s) * m.set.burst
		ks := &p.k[s]
		ks.own = bucket{tokens: depth, last: sim}
		ks.peak = bucket{tokens: maxRate(s), last: sim}
		if j < 0 {
			continue
		}
		pk := m.refresh(old, j, s, sim)
		frac := r.Fraction() / old.layout.Ranges[j].Fraction()
		ks.own.tokens = min(pk.own.tokens*frac, depth)
		ks.peak.tokens, ks.hotSince = pk.peak.tokens, pk.hotSince
		if frac == 1 {
			ks.usage = pk.usage
		}
	}
	return p
}
