package faultproxy

import (
	"encoding/json"
)

// afterForward charges reads, whose size only the answer tells, and merges
// what the proxy removed from a batch into the target's answer. It returns
// the body to send.
func (p *Proxy) afterForward(c *call, d *decision, body []byte) []byte {
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

// chargeRead charges a GetItem or Query to its key for the items returned.
func (p *Proxy) chargeRead(c *call, body []byte) {
	var out struct {
		Item  json.RawMessage
		Items []json.RawMessage
	}
	if json.Unmarshal(body, &out) != nil {
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
	var top map[string]json.RawMessage
	var out struct {
		Responses       map[string][]json.RawMessage
		UnprocessedKeys leftoverKeys
	}
	if json.Unmarshal(body, &top) != nil || json.Unmarshal(body, &out) != nil {
		return body
	}
	p.chargeBatchGet(c, d, out.Responses, out.UnprocessedKeys)
	if len(d.removed) == 0 {
		return body
	}
	return c.mergeUnprocessedKeys(d.removed, top, body)
}

type readCharge struct {
	k     Key
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
			pending[k]--
			charges = append(charges, readCharge{k, readUnits(itemSize(item), consistent)})
		}
	}
	for _, raw := range unprocessed {
		if item, err := decodeItem(raw); err == nil {
			if k, ok := s.pkOf(t, "", item); ok {
				pending[k]--
			}
		}
	}
	for _, e := range c.batch[t] {
		if e.hasKey && pending[e.key] > 0 {
			pending[e.key]--
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
			pending[e.key]++
		}
	}
	return pending
}
