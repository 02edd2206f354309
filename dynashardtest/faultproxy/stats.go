package faultproxy

import (
	"maps"
	"time"

	"github.com/dynashard/dynashard/partition"
)

// Key names one partition of the capacity model: a partition-key value of a
// table, or of a global secondary index when Index is set.
type Key struct {
	Table string
	Index string // global secondary index, "" for the table and its local indexes
	PK    string // S and N as written, B in standard base64
}

// Counters counts what the proxy saw and did. In Stats.Ops and Stats.Total a
// request counts once (Unprocessed and capacity count entries and units). In
// Stats.Keys a batch counts once per entry for Requests, Forwarded,
// Throttled, Unprocessed and capacity, and once per distinct key for
// whole-request faults (latency, ThrottleRate, errors, resets, truncation).
type Counters struct {
	Requests  int // requests (per key: entries) received
	Forwarded int // requests forwarded to the target

	// Throttled counts ProvisionedThroughputExceededException answers
	// (capacity or ThrottleRate) and, per key, batch entries refused for
	// capacity.
	Throttled int
	// Unprocessed counts batch write requests and keys the proxy returned
	// in UnprocessedItems/UnprocessedKeys (capacity or UnprocessedRate).
	Unprocessed int

	WCU, RCU float64 // capacity units charged by the model

	Delayed int           // requests given injected latency
	Delay   time.Duration // total latency injected

	Errors       int // HTTP 500 before forwarding (ErrorRate)
	ErrorsAfter  int // HTTP 500 after forwarding (ErrorAfterRate)
	ResetsBefore int // connections reset before forwarding
	ResetsAfter  int // connections reset after forwarding
	Truncated    int // responses cut off
}

// Stats is a snapshot of the proxy's counters. Its maps are copies owned by
// the caller.
type Stats struct {
	Total Counters
	Ops   map[string]Counters // by operation name ("PutItem")
	Keys  map[Key]Counters

	// Tables is the partition model's tables and global secondary
	// indexes, with their partitions; nil in the PerKey model.
	Tables map[TableKey]TableStats
}

// TableStats describes a table (or global secondary index) of the
// partition model.
type TableStats struct {
	Throughput // its provisioned throughput, or OnDemand
	// Partitions is its partitions in layout order: a split puts the upper
	// half of a partition's range last (partition.Layout.Split).
	Partitions []PartitionStats
}

// PartitionStats describes one partition of the partition model.
type PartitionStats struct {
	Range partition.Range // the part of the key-hash space it holds
	// RCU and WCU are its throughput: its share of the table's, or on
	// demand the per-partition maxima (3,000 and 1,000).
	RCU, WCU float64
	// Bytes is the size of the items written through the proxy that it
	// holds.
	Bytes       int64
	Read, Write Usage
}

// Usage counts one kind of capacity (reads or writes) on one partition,
// since the partition was created (by its table, or by the split or
// doubling that made it) or since ResetStats.
type Usage struct {
	Units     float64 // capacity units charged
	Borrowed  float64 // of Units, those adaptive capacity lent
	Throttled int     // requests and batch entries refused
}

func newStats() Stats {
	return Stats{Ops: map[string]Counters{}, Keys: map[Key]Counters{}}
}

func (s Stats) clone() Stats {
	return Stats{Total: s.Total, Ops: maps.Clone(s.Ops), Keys: maps.Clone(s.Keys)}
}

// op applies f to the counters of the operation and the total.
func (s *Stats) op(op string, f func(*Counters)) {
	c := s.Ops[op]
	f(&c)
	s.Ops[op] = c
	f(&s.Total)
}

// key applies f to the counters of k.
func (s *Stats) key(k Key, f func(*Counters)) {
	c := s.Keys[k]
	f(&c)
	s.Keys[k] = c
}
