package faultproxy

import (
	"encoding/json"
	"maps"
	"time"
)

// removal is a batch entry the proxy keeps from the target, for capacity
// or because UnprocessedRate picked it.
type removal struct {
	e        entry
	capacity bool
}

// batchSplit is a batch divided into the entries forwarded and those
// removed, by table.
type batchSplit struct {
	kept      map[string][]json.RawMessage
	removed   map[string][]removal
	nKept     int
	nRemoved  int
	nCapacity int // removals for capacity
}

// shapeBatch removes from a batch the entries whose key is over budget or
// that UnprocessedRate picks (when opSel and the entry's key is selected),
// charging write capacity for the entries kept. If nothing is left, the
// proxy answers itself: ProvisionedThroughputExceededException when every
// entry was refused for capacity (as DynamoDB does when none of a batch can
// be processed for throughput), else a response listing them all as
// unprocessed. The caller holds p.mu.
func (p *Proxy) shapeBatch(c *call, d *decision, opSel bool, now time.Time) {
	s := p.splitBatch(c, d, opSel, now)
	switch {
	case s.nRemoved == 0:
	case s.nKept == 0 && s.nCapacity == s.nRemoved:
		p.throttleBatch(c, d, s.removed)
	default:
		d.removed = p.countUnprocessed(c, s)
		if s.nKept == 0 {
			d.reply = c.allUnprocessed(d.removed)
		} else {
			d.forward = c.withRequestItems(s.kept)
		}
	}
}

// splitBatch draws UnprocessedRate and admits each entry in table order, so
// that a seeded run removes the same entries. The caller holds p.mu.
func (p *Proxy) splitBatch(c *call, d *decision, opSel bool, now time.Time) batchSplit {
	s := batchSplit{kept: map[string][]json.RawMessage{}, removed: map[string][]removal{}}
	for _, t := range c.tables {
		for _, e := range c.batch[t] {
			entrySel := opSel && (p.keys == nil || e.hasKey && p.keys[e.key.PK])
			switch {
			case entrySel && p.chance(p.cfg.UnprocessedRate):
				s.removed[t] = append(s.removed[t], removal{e: e})
				s.nRemoved++
			case e.hasKey && !p.capacity.admit(e.key, c.kind, now):
				s.removed[t] = append(s.removed[t], removal{e: e, capacity: true})
				s.nRemoved++
				s.nCapacity++
			default:
				s.kept[t] = append(s.kept[t], e.raw)
				s.nKept++
				p.keep(c, d, e, now)
			}
		}
	}
	return s
}

// keep records a forwarded entry's key and charges its write units. The
// caller holds p.mu.
func (p *Proxy) keep(c *call, d *decision, e entry, now time.Time) {
	if !e.hasKey {
		return
	}
	d.fwdKeys = append(d.fwdKeys, e.key.Key)
	if c.kind == kindWrite {
		p.charge(e.key, kindWrite, e.units, now, c.op)
	}
	if e.write != nil {
		d.writes = append(d.writes, *e.write)
	}
}

// throttleBatch fails a batch every entry of which was refused for
// capacity. The caller holds p.mu.
func (p *Proxy) throttleBatch(c *call, d *decision, removed map[string][]removal) {
	d.before = throttle
	p.stats.op(c.op, func(s *Counters) { s.Throttled++ })
	for _, rs := range removed {
		for _, r := range rs {
			p.stats.key(r.e.key.Key, func(s *Counters) { s.Throttled++ })
		}
	}
}

// countUnprocessed counts s's removals and returns them as the raw entries
// to hand back, by table. The caller holds p.mu.
func (p *Proxy) countUnprocessed(c *call, s batchSplit) map[string][]json.RawMessage {
	p.stats.op(c.op, func(st *Counters) { st.Unprocessed += s.nRemoved })
	removed := map[string][]json.RawMessage{}
	for t, rs := range s.removed {
		for _, r := range rs {
			removed[t] = append(removed[t], r.e.raw)
			if r.e.hasKey {
				p.stats.key(r.e.key.Key, func(st *Counters) {
					st.Unprocessed++
					if r.capacity {
						st.Throttled++
					}
				})
			}
		}
	}
	return removed
}

// allUnprocessed is the proxy's own answer to a batch it removed every
// entry from.
func (c *call) allUnprocessed(removed map[string][]json.RawMessage) []byte {
	out := map[string]json.RawMessage{}
	if c.kind == kindWrite {
		out["UnprocessedItems"] = rawArrays(removed)
	} else {
		out["Responses"] = json.RawMessage("{}")
		out["UnprocessedKeys"] = rawObjects(c.unprocessedKeys(removed))
	}
	if c.wantsCapacity() {
		out["ConsumedCapacity"] = c.zeroCapacity()
	}
	return rawObject(out)
}

// zeroCapacity is the ConsumedCapacity of a batch the proxy answered itself.
func (c *call) zeroCapacity() json.RawMessage {
	type cc struct {
		TableName     string
		CapacityUnits float64
	}
	var out []cc
	for _, t := range c.tables {
		out = append(out, cc{TableName: t})
	}
	b, _ := json.Marshal(out) // cannot fail: strings and numbers
	return b
}

// withRequestItems is the request body with only the kept entries; every
// other member (ReturnConsumedCapacity and the like) is passed on as sent.
func (c *call) withRequestItems(kept map[string][]json.RawMessage) []byte {
	top := make(map[string]json.RawMessage, len(c.top))
	maps.Copy(top, c.top)
	if c.kind == kindWrite {
		top["RequestItems"] = rawArrays(kept)
	} else {
		top["RequestItems"] = rawObjects(c.unprocessedKeys(kept))
	}
	return rawObject(top)
}

// unprocessedKeys rebuilds BatchGetItem KeysAndAttributes for keys, keeping
// each table's projection and consistency settings.
func (c *call) unprocessedKeys(keys map[string][]json.RawMessage) map[string]map[string]json.RawMessage {
	out := map[string]map[string]json.RawMessage{}
	for t, ks := range keys {
		kaa := map[string]json.RawMessage{}
		maps.Copy(kaa, c.kaa[t])
		kaa["Keys"] = rawArray(ks)
		out[t] = kaa
	}
	return out
}

// mergeUnprocessedItems adds the write requests the proxy removed to the
// target's UnprocessedItems, so that the client retries both alike.
func mergeUnprocessedItems(removed map[string][]json.RawMessage, body []byte) []byte {
	var top map[string]json.RawMessage
	var un map[string][]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body
	}
	if raw, ok := top["UnprocessedItems"]; ok && json.Unmarshal(raw, &un) != nil {
		return body
	}
	if un == nil {
		un = map[string][]json.RawMessage{}
	}
	for t, rs := range removed {
		un[t] = append(un[t], rs...)
	}
	top["UnprocessedItems"] = rawArrays(un)
	return rawObject(top)
}

// mergeUnprocessedKeys adds the keys the proxy removed to the target's
// UnprocessedKeys in top, the decoded body. The target's own leftovers for a
// table come first; the merged entry carries the request's settings
// (projection, names, consistency), as DynamoDB's does. (dynalite's lack
// them.)
func (c *call) mergeUnprocessedKeys(removed map[string][]json.RawMessage, top map[string]json.RawMessage, body []byte) []byte {
	var un map[string]map[string]json.RawMessage
	if raw, ok := top["UnprocessedKeys"]; ok && json.Unmarshal(raw, &un) != nil {
		return body
	}
	if un == nil {
		un = map[string]map[string]json.RawMessage{}
	}
	merged := map[string][]json.RawMessage{}
	for t, keys := range removed {
		var have []json.RawMessage
		_ = json.Unmarshal(un[t]["Keys"], &have)
		merged[t] = append(have, keys...)
	}
	for t, kaa := range c.unprocessedKeys(merged) {
		un[t] = kaa
	}
	top["UnprocessedKeys"] = rawObjects(un)
	return rawObject(top)
}
