package faultproxy

import (
	"encoding/json"
	"slices"
)

type kind int

const (
	kindOther kind = iota
	kindWrite
	kindRead
)

// pkey is a partition-key value as the capacity models see it: its name in
// Stats, and its place in the key-hash space (partition.KeyHash), which
// the partition model maps to a partition.
type pkey struct {
	Key
	hash uint64
}

// entry is one write request of a BatchWriteItem or one key of a
// BatchGetItem, kept as sent so a rewritten request carries it unchanged.
type entry struct {
	raw    json.RawMessage
	key    pkey
	hasKey bool
	units  float64    // write units (BatchWriteItem)
	write  *itemWrite // its effect on stored bytes, when known
}

// call is what the proxy understood of one request. A request it cannot
// parse is still forwarded; it just has no keys and is never charged.
type call struct {
	op   string
	body []byte
	kind kind

	// Single-item operations and Query.
	key        pkey
	hasKey     bool
	units      float64 // write units, known before forwarding
	consistent bool
	write      *itemWrite // PutItem, DeleteItem: the effect on stored bytes
	allNew     bool       // UpdateItem with ReturnValues ALL_NEW

	// Batch operations: entries per table, tables sorted so that random
	// draws happen in a reproducible order.
	top    map[string]json.RawMessage
	tables []string
	batch  map[string][]entry
	kaa    map[string]map[string]json.RawMessage // BatchGetItem KeysAndAttributes per table

	// Transactions and unparsed batches: keys for selection and stats only.
	other []Key

	schemas map[string]*tableSchema
}

// keys returns the distinct keys the request touches, in a stable order.
func (c *call) keys() []Key {
	var ks []Key
	if c.hasKey {
		ks = append(ks, c.key.Key)
	}
	for _, t := range c.tables {
		for _, e := range c.batch[t] {
			if e.hasKey && !slices.Contains(ks, e.key.Key) {
				ks = append(ks, e.key.Key)
			}
		}
	}
	for _, k := range c.other {
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// consistentRead reports BatchGetItem's ConsistentRead for table.
func (c *call) consistentRead(table string) bool {
	var b bool
	_ = json.Unmarshal(c.kaa[table]["ConsistentRead"], &b)
	return b
}

// wantsCapacity reports whether the request asked for ConsumedCapacity.
func (c *call) wantsCapacity() bool {
	var s string
	_ = json.Unmarshal(c.top["ReturnConsumedCapacity"], &s)
	return s == "TOTAL" || s == "INDEXES"
}
