package faultproxy

import (
	"encoding/json"
	"time"
)

type fault int

const (
	none fault = iota
	resetConn
	internalError
	throttle
	truncate
)

// decision is what the proxy does with one request.
type decision struct {
	delay   time.Duration
	before  fault  // instead of forwarding
	after   fault  // to the response of a forwarded request
	forward []byte // rewritten request body; nil: as received
	reply   []byte // answer without forwarding (a batch with nothing left)
	removed map[string][]json.RawMessage
	fwdKeys []Key       // keys of the batch entries forwarded, one per entry
	writes  []itemWrite // stored-bytes effects of the batch writes forwarded
}

// decide draws the request's faults and applies the capacity model to it.
// It holds p.mu throughout so that concurrent requests draw from the random
// source, and charge capacity, one at a time.
func (p *Proxy) decide(c *call) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	var d decision
	p.countRequests(c)
	if p.selected(c.op, c.keys()) {
		p.drawDelay(c, &d)
		p.drawFault(c, &d)
	}
	if d.before == none {
		p.learnTables(c, now)
		p.applyCapacity(c, &d, now)
	}
	return d
}

// learnTables tells the capacity model what the proxy's DescribeTable
// found of the tables c touches, for tables it has not seen created. The
// caller holds p.mu.
func (p *Proxy) learnTables(c *call, now time.Time) {
	for _, s := range c.schemas {
		if s.def != nil {
			p.capacity.define(*s.def, now)
		}
	}
}

// countRequests counts a batch once per entry with a key, and any other
// request once per distinct key. The caller holds p.mu.
func (p *Proxy) countRequests(c *call) {
	p.stats.op(c.op, func(s *Counters) { s.Requests++ })
	if c.batch == nil {
		for _, k := range c.keys() {
			p.stats.key(k, func(s *Counters) { s.Requests++ })
		}
		return
	}
	for _, t := range c.tables {
		for _, e := range c.batch[t] {
			if e.hasKey {
				p.stats.key(e.key.Key, func(s *Counters) { s.Requests++ })
			}
		}
	}
}

// drawDelay draws the request's latency. The caller holds p.mu.
func (p *Proxy) drawDelay(c *call, d *decision) {
	cfg := p.cfg
	if cfg.Latency <= 0 && cfg.Jitter <= 0 {
		return
	}
	d.delay = cfg.Latency
	if cfg.Jitter > 0 {
		d.delay += time.Duration(p.rng.Int64N(int64(cfg.Jitter)))
	}
	p.countLocked(c, func(s *Counters) { s.Delayed++; s.Delay += d.delay })
}

// drawFault draws the rate-driven faults in the order Config documents,
// stopping at the first hit, so that each rate is the fraction of requests
// that reach its draw. The caller holds p.mu.
func (p *Proxy) drawFault(c *call, d *decision) {
	cfg := p.cfg
	switch {
	case p.chance(cfg.ResetBeforeRate):
		d.before = resetConn
		p.countLocked(c, func(s *Counters) { s.ResetsBefore++ })
	case p.chance(cfg.ErrorRate):
		d.before = internalError
		p.countLocked(c, func(s *Counters) { s.Errors++ })
	case p.chance(cfg.ThrottleRate):
		d.before = throttle
		p.countLocked(c, func(s *Counters) { s.Throttled++ })
	case p.chance(cfg.ResetAfterRate):
		d.after = resetConn
		p.countLocked(c, func(s *Counters) { s.ResetsAfter++ })
	case p.chance(cfg.ErrorAfterRate):
		d.after = internalError
		p.countLocked(c, func(s *Counters) { s.ErrorsAfter++ })
	case p.chance(cfg.TruncateRate):
		d.after = truncate
		p.countLocked(c, func(s *Counters) { s.Truncated++ })
	}
}

// applyCapacity admits and charges the request's keys. A single-item
// request over budget is throttled whole; a batch loses only the entries
// over budget. Reads are charged after forwarding, when their size is
// known. The caller holds p.mu.
func (p *Proxy) applyCapacity(c *call, d *decision, now time.Time) {
	switch {
	case c.batch != nil:
		p.shapeBatch(c, d, p.ops == nil || p.ops[c.op], now)
	case c.hasKey && (c.kind == kindWrite || c.kind == kindRead):
		if !p.capacity.admit(c.key, c.kind, now) {
			d.before = throttle
			p.countLocked(c, func(s *Counters) { s.Throttled++ })
			return
		}
		if c.kind == kindWrite {
			p.charge(c.key, kindWrite, c.units, now, c.op)
		}
	}
}

// chance draws against rate. The caller holds p.mu.
func (p *Proxy) chance(rate float64) bool {
	return rate > 0 && p.rng.Float64() < rate
}

// countLocked applies f to the counters of c's operation and of every
// distinct key it touches. The caller holds p.mu.
func (p *Proxy) countLocked(c *call, f func(*Counters)) {
	p.stats.op(c.op, f)
	for _, k := range c.keys() {
		p.stats.key(k, f)
	}
}

// selected reports whether rate-driven faults apply to a request for op
// touching keys.
func (p *Proxy) selected(op string, keys []Key) bool {
	if p.ops != nil && !p.ops[op] {
		return false
	}
	if p.keys == nil {
		return true
	}
	for _, k := range keys {
		if p.keys[k.PK] {
			return true
		}
	}
	return false
}
