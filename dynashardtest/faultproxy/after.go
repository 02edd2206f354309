package faultproxy

import (
	"encoding/json"
)

// afterForward charges reads, whose size only the answer tells, records
// what the target applied for the capacity model, and merges what the proxy
// removed from a batch into the target's answer. It returns the body to
// send.
func (p *Proxy) afterForward(c *call, d *decision, body []byte) []byte {
	p.recordApplied(c, d, body)
	switch c.op {
	case "GetItem", "Query":
		if c.hasKey {
			p.chargeRead(c, body)
		}
	case "BatchWriteItem":
		if len(d.removed) > 0 {
			return mergeUnprocessedItems(d.removed, body)
		}
	case "BatchGetItem":
		return p.afterBatchGet(c, d, body)
	}
	return body
}

// recordApplied tells the capacity model about a table created, updated or
// deleted, and about the writes the target applied: a batch's forwarded
// entries (counted even if the target itself left some unprocessed, which
// local servers do not), and an update's new item when it returned ALL_NEW.
func (p *Proxy) recordApplied(c *call, d *decision, body []byte) {
	def, isDDL := ddlDef(c.op, c.body)
	writes := d.writes
	if c.write != nil && c.op != "UpdateItem" {
		writes = append(writes, *c.write)
	}
	if c.allNew && c.write != nil {
		if w, ok := updatedItem(*c.write, body); ok {
			writes = append(writes, w)
		}
	}
	if !isDDL && len(writes) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if isDDL {
		p.capacity.define(def, now)
	}
	for _, w := range writes {
		p.capacity.store(w, now)
	}
}

// updatedItem is w with the size of the item an UpdateItem with ALL_NEW
// returned.
func updatedItem(w itemWrite, body []byte) (itemWrite, bool) {
	var out struct{ Attributes json.RawMessage }
	if json.Unmarshal(body, &out) != nil || out.Attributes == nil {
		return w, false
	}
	item, err := decodeItem(out.Attributes)
	if err != nil {
		return w, false
	}
	w.size = itemSize(item)
	return w, true
}

// readOutput is what chargeRead reads of a GetItem or Query answer.
type readOutput struct {
	Item  json.RawMessage
	Items []json.RawMessage
}

// readReadOutput reads body as encoding/json would into a readOutput.
func readReadOutput(body []byte) (readOutput, bool) {
	if n, err := parseJSON(body); err == nil {
		if out, err := readOutputAt(body, n); err == nil {
			return out, true
		}
	}
	var out readOutput
	return out, json.Unmarshal(body, &out) == nil
}

func readOutputAt(src []byte, n jnode) (readOutput, error) {
	var out readOutput
	f, err := fields(src, n, "Item", "Items")
	if err != nil {
		return out, err
	}
	if out.Item, err = rawField(src, f[0]); err != nil {
		return out, err
	}
	if f[1].kind != 0 {
		out.Items, err = rawElems(src, f[1])
	}
	return out, err
}

// chargeRead charges a GetItem or Query to its key for the items returned.
func (p *Proxy) chargeRead(c *call, body []byte) {
	out, ok := readReadOutput(body)
	if !ok {
		return
	}
	size := 0
	if out.Item != nil {
		if item, err := decodeItem(out.Item); err == nil {
			size = itemSize(item)
		}
	}
	for _, raw := range out.Items {
		if item, err := decodeItem(raw); err == nil {
			size += itemSize(item)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.charge(c.key, kindRead, readUnits(size, c.consistent), p.now(), c.op)
}

// leftoverKeys is the decoded UnprocessedKeys of a BatchGetItem answer: the
// keys the target itself left unprocessed.
type leftoverKeys map[string]struct{ Keys []json.RawMessage }

func (p *Proxy) afterBatchGet(c *call, d *decision, body []byte) []byte {
	if c.top == nil {
		return body
	}
	top, out, ok := readBatchGetOutput(body)
	if !ok {
		return body
	}
	p.chargeBatchGet(c, d, out.Responses, out.UnprocessedKeys)
	if len(d.removed) == 0 {
		return body
	}
	return c.mergeUnprocessedKeys(d.removed, top, body)
}

// batchGetOutput is what afterBatchGet reads of a BatchGetItem answer.
type batchGetOutput struct {
	Responses       map[string][]json.RawMessage
	UnprocessedKeys leftoverKeys
}

// readBatchGetOutput reads body as encoding/json would into its members
// and into a batchGetOutput.
func readBatchGetOutput(body []byte) (map[string]json.RawMessage, batchGetOutput, bool) {
	if n, err := parseJSON(body); err == nil {
		if top, out, err := batchGetOutputAt(body, n); err == nil {
			return top, out, true
		}
	}
	var top map[string]json.RawMessage
	var out batchGetOutput
	if json.Unmarshal(body, &top) != nil || json.Unmarshal(body, &out) != nil {
		return nil, out, false
	}
	return top, out, true
}

func batchGetOutputAt(src []byte, n jnode) (map[string]json.RawMessage, batchGetOutput, error) {
	var out batchGetOutput
	top, err := rawMembers(src, n)
	if err != nil {
		return nil, out, err
	}
	f, err := fields(src, n, "Responses", "UnprocessedKeys")
	if err != nil {
		return nil, out, err
	}
	if f[0].kind != 0 {
		resp, err := members(src, f[0])
		if err != nil {
			return nil, out, err
		}
		out.Responses = make(map[string][]json.RawMessage, len(resp))
		for t, items := range resp {
			if out.Responses[t], err = rawElems(src, items); err != nil {
				return nil, out, err
			}
		}
	}
	if f[1].kind != 0 {
		un, err := members(src, f[1])
		if err != nil {
			return nil, out, err
		}
		out.UnprocessedKeys = make(leftoverKeys, len(un))
		for t, kaa := range un {
			g, err := fields(src, kaa, "Keys")
			if err != nil {
				return nil, out, err
			}
			var keys []json.RawMessage
			if g[0].kind != 0 {
				if keys, err = rawElems(src, g[0]); err != nil {
					return nil, out, err
				}
			}
			out.UnprocessedKeys[t] = struct{ Keys []json.RawMessage }{keys}
		}
	}
	return top, out, nil
}

type readCharge struct {
	k     pkey
	units float64
}

// chargeBatchGet charges each returned item to its partition key, and the
// minimum read to each forwarded key whose item was not returned (absent,
// or its partition key projected away) and not left unprocessed.
func (p *Proxy) chargeBatchGet(c *call, d *decision, resp map[string][]json.RawMessage, unprocessed leftoverKeys) {
	var charges []readCharge
	for _, t := range c.tables {
		if s := c.schemas[t]; s != nil {
			charges = append(charges, c.tableReadCharges(t, s, d.removed[t], resp[t], unprocessed[t].Keys)...)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for _, ch := range charges {
		p.charge(ch.k, kindRead, ch.units, now, c.op)
	}
}

// tableReadCharges matches table t's returned items and unprocessed keys
// against the keys forwarded, by partition key: a returned item need not
// carry its sort key (a projection), so it cannot be matched exactly.
func (c *call) tableReadCharges(t string, s *tableSchema, removed, returned, unprocessed []json.RawMessage) []readCharge {
	consistent := c.consistentRead(t)
	pending := c.forwardedKeys(t, removed)
	var charges []readCharge
	for _, raw := range returned {
		item, err := decodeItem(raw)
		if err != nil {
			continue
		}
		if k, ok := s.pkOf(t, "", item); ok {
			pending[k.Key]--
			charges = append(charges, readCharge{k, readUnits(itemSize(item), consistent)})
		}
	}
	for _, raw := range unprocessed {
		if item, err := decodeItem(raw); err == nil {
			if k, ok := s.pkOf(t, "", item); ok {
				pending[k.Key]--
			}
		}
	}
	for _, e := range c.batch[t] {
		if e.hasKey && pending[e.key.Key] > 0 {
			pending[e.key.Key]--
			charges = append(charges, readCharge{e.key, readUnits(0, consistent)})
		}
	}
	return charges
}

// forwardedKeys counts, per partition key, table t's entries that were
// forwarded: those with a key and not among removed.
func (c *call) forwardedKeys(t string, removed []json.RawMessage) map[Key]int {
	gone := map[string]bool{}
	for _, raw := range removed {
		gone[string(raw)] = true
	}
	pending := map[Key]int{}
	for _, e := range c.batch[t] {
		if e.hasKey && !gone[string(e.raw)] {
			pending[e.key.Key]++
		}
	}
	return pending
}
