package faultproxy

import (
	"time"

	"github.com/dynashard/dynashard/partition"
)

// itemWrite is a write whose effect on stored bytes the partition model
// tracks once the target has applied it.
type itemWrite struct {
	key  pkey   // the item's partition key
	id   string // the item's primary key (tableSchema.itemID)
	size int    // the item's size by DynamoDB's rules; negative: deleted
}

// storedItem is what the partition model keeps of an item: where it lives
// and how big it is.
type storedItem struct {
	hash uint64
	size int
}

// store records an applied write: a put adds its item or replaces the item
// it overwrites, a delete removes it. A partition that then holds more than
// PartitionSize splits. Items of tables the model does not know yet are
// kept too, for when it learns them.
func (m *partitionModel) store(w itemWrite, now time.Time) {
	items := m.items[w.key.Table]
	if items == nil {
		items = map[string]storedItem{}
		m.items[w.key.Table] = items
	}
	delta := -int64(items[w.id].size)
	if w.size >= 0 {
		items[w.id] = storedItem{hash: w.key.hash, size: w.size}
		delta += int64(w.size)
	} else {
		delete(items, w.id)
	}
	k := TableKey{Table: w.key.Table}
	t := m.tables[k]
	if t == nil {
		return
	}
	if i := t.layout.Find(w.key.hash); i >= 0 {
		t.parts[i].bytes += delta
		m.splitFull(k, i, m.clock.at(now))
	}
}

// recount sums the stored bytes of t's partitions from the items. Global
// indexes hold none: the model does not track what they project.
func (m *partitionModel) recount(k TableKey, t *tableState) {
	if k.Index != "" {
		return
	}
	for _, it := range m.items[k.Table] {
		if i := t.layout.Find(it.hash); i >= 0 {
			t.parts[i].bytes += int64(it.size)
		}
	}
}

// splitFull splits partition i of table k while it holds more than
// PartitionSize bytes of at least two distinct partition-key values, then
// does the same to each half. One item collection bigger than the partition
// size stays whole (DynamoDB would split it by sort key; the model does
// not). Each split is partition.Layout.Split: halves of the range, each
// with half the throughput.
func (m *partitionModel) splitFull(k TableKey, i int, sim time.Time) {
	t := m.tables[k]
	if t.parts[i].bytes <= m.set.size || !m.divisible(k.Table, t.layout.Ranges[i]) {
		return
	}
	l, err := t.layout.Split(i)
	if err != nil {
		return
	}
	hi := l.Len() - 1
	m.relayout(k, t, t.tp, l, sim)
	m.splitFull(k, i, sim)
	m.splitFull(k, hi, sim)
}

// divisible reports whether the items of table within r have at least two
// distinct hashes, so that halving r (perhaps repeatedly) divides them.
func (m *partitionModel) divisible(table string, r partition.Range) bool {
	var first uint64
	seen := false
	for _, it := range m.items[table] {
		if !r.Contains(it.hash) {
			continue
		}
		if seen && it.hash != first {
			return true
		}
		first, seen = it.hash, true
	}
	return false
}
