package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Proxy is a running fault-injecting proxy. Its methods are safe for
// concurrent use. Close it when done.
type Proxy struct {
	target    *url.URL
	url       string
	ln        net.Listener
	srv       *http.Server
	transport *http.Transport
	client    *http.Client
	ctx       context.Context // cancelled by Close: aborts delays and forwarded calls
	cancel    context.CancelFunc
	served    chan struct{}
	handlers  sync.WaitGroup
	schemas   schemaCache

	mu       sync.Mutex // guards everything below
	cfg      Config
	ops      map[string]bool
	keys     map[string]bool
	rng      *rand.Rand
	wcu      map[Key]*bucket
	rcu      map[Key]*bucket
	stats    Stats
	closed   bool
	nextID   uint64
	now      func() time.Time // replaced by tests to freeze the buckets' clock
	closeErr error
}

// New starts a proxy on a free loopback port that forwards to target, the
// base URL of a DynamoDB-compatible endpoint ("http://127.0.0.1:8000"). It
// returns an error for an invalid target or Config.
func New(target string, cfg Config) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q: want http(s)://host:port", target)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		// The proxy must see the bodies it charges and rewrites.
		DisableCompression: true,
	}
	p := &Proxy{
		target:    &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path},
		url:       "http://" + ln.Addr().String(),
		ln:        ln,
		transport: tr,
		client:    &http.Client{Transport: tr},
		ctx:       ctx,
		cancel:    cancel,
		served:    make(chan struct{}),
		schemas:   schemaCache{m: map[string]*tableSchema{}},
		wcu:       map[Key]*bucket{},
		rcu:       map[Key]*bucket{},
		stats:     newStats(),
		now:       time.Now,
	}
	p.setLocked(cfg)
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: time.Minute,
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return p, nil
}

// URL returns the proxy's base URL, to be used as the client's endpoint.
func (p *Proxy) URL() string { return p.url }

// Set replaces the configuration and reseeds the random source from
// cfg.Seed. Capacity already consumed stays charged: each key's balance is
// kept, capped at the new bucket depth. An invalid cfg is rejected and the
// old configuration kept.
func (p *Proxy) Set(cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(cfg)
	return nil
}

func (p *Proxy) setLocked(cfg Config) {
	cfg.Ops = append([]string(nil), cfg.Ops...)
	cfg.Keys = append([]string(nil), cfg.Keys...)
	p.cfg = cfg
	p.ops, p.keys = nil, nil
	if len(cfg.Ops) > 0 {
		p.ops = map[string]bool{}
		for _, o := range cfg.Ops {
			p.ops[o] = true
		}
	}
	if len(cfg.Keys) > 0 {
		p.keys = map[string]bool{}
		for _, k := range cfg.Keys {
			p.keys[k] = true
		}
	}
	seed := uint64(cfg.Seed)
	p.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	now := p.now()
	for _, m := range []struct {
		b    map[Key]*bucket
		rate float64
	}{{p.wcu, cfg.WCU}, {p.rcu, cfg.RCU}} {
		for _, b := range m.b {
			b.tokens = min(b.tokens, m.rate*cfg.burstSeconds())
			b.last = now
		}
	}
}

// Stats returns a copy of the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.clone()
}

// ResetStats zeroes the counters. Capacity balances are not affected.
func (p *Proxy) ResetStats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats = newStats()
}

// Close stops the listener, aborts requests in flight (their injected delays
// and forwarded calls are cancelled, their clients see a closed connection)
// and waits for every handler to return. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return p.closeErr
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	err := p.srv.Close()
	<-p.served
	p.handlers.Wait()
	p.transport.CloseIdleConnections()
	if err != nil {
		err = fmt.Errorf("faultproxy: close: %w", err)
	}
	p.mu.Lock()
	p.closeErr = err
	p.mu.Unlock()
	return err
}

// enter registers a handler unless the proxy is closing, so that Close's
// Wait never races with an Add.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.handlers.Add(1)
	return true
}

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
	fwdKeys []Key // keys of the batch entries forwarded, one per entry
}

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	defer p.handlers.Done()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client is gone
	}
	c := p.parse(r.Context(), r.Header, opName(r.Header.Get("X-Amz-Target")), body)
	d := p.decide(c)
	if d.delay > 0 {
		t := time.NewTimer(d.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			// Closing, or the client gave up. Returning would let
			// net/http answer an empty 200, which the SDK takes for
			// success.
			t.Stop()
			reset(w)
			return
		}
	}
	switch d.before {
	case resetConn:
		reset(w)
		return
	case internalError:
		p.reply(w, http.StatusInternalServerError, internalErrorBody)
		return
	case throttle:
		p.reply(w, http.StatusBadRequest, throttleBody)
		return
	}
	if d.reply != nil {
		p.reply(w, http.StatusOK, d.reply)
		return
	}
	fwd := c.body
	if d.forward != nil {
		fwd = d.forward
	}
	resp, rb, err := p.forward(r, fwd)
	if err != nil {
		if r.Context().Err() != nil {
			reset(w)
			return
		}
		p.reply(w, http.StatusBadGateway, mustJSON(map[string]string{
			"__type": "faultproxy#BadGateway", "message": err.Error(),
		}))
		return
	}
	p.mu.Lock()
	p.stats.op(c.op, func(s *Counters) { s.Forwarded++ })
	fwdKeys := d.fwdKeys
	if c.batch == nil {
		fwdKeys = c.keys()
	}
	for _, k := range fwdKeys {
		p.stats.key(k, func(s *Counters) { s.Forwarded++ })
	}
	p.mu.Unlock()
	switch c.op {
	case "CreateTable", "DeleteTable", "UpdateTable":
		var in struct{ TableName string }
		if json.Unmarshal(c.body, &in) == nil {
			p.schemas.forget(in.TableName)
		}
	}
	if resp.StatusCode == http.StatusOK {
		rb = p.afterForward(c, &d, rb)
	}

	h := w.Header()
	for k, vs := range resp.Header {
		if !hopByHop(k) && k != "Content-Length" && k != "X-Amz-Crc32" {
			h[k] = vs
		}
	}
	setChecksum(h, rb)
	switch d.after {
	case resetConn:
		reset(w)
	case internalError:
		p.reply(w, http.StatusInternalServerError, internalErrorBody)
	case truncate:
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(rb[:len(rb)/2])
		reset(w)
	default:
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(rb)
	}
}

// reset closes the client connection with a TCP RST (SO_LINGER 0), after
// flushing whatever part of a response was written: the client then reads
// "connection reset by peer", which the SDK's retryer treats as retryable.
// (A plain close would surface as an unexpected EOF, which it does not
// retry.)
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // makes net/http drop the connection
	}
	conn, _, err := hj.Hijack() // flushes a partial response first
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// reply writes a body the proxy made up, with DynamoDB's headers.
func (p *Proxy) reply(w http.ResponseWriter, status int, body []byte) {
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	p.mu.Unlock()
	h := w.Header()
	h.Del("Content-Encoding")
	h.Set("Content-Type", jsonContentType)
	h.Set("X-Amzn-Requestid", fmt.Sprintf("FAULTPROXY%042d", id))
	setChecksum(h, body)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// setChecksum sets the length and the CRC32 that the SDK verifies.
func setChecksum(h http.Header, body []byte) {
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
}

func hopByHop(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// forward sends body to the target with the client's headers and reads the
// whole response.
func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, []byte, error) {
	u := *p.target
	u.Path = singleSlash(p.target.Path, r.URL.Path)
	u.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, vs := range r.Header {
		// Accept-Encoding is dropped so that the target answers in
		// identity encoding, which the proxy can read and rewrite.
		if hopByHop(k) || k == "Content-Length" || k == "Accept-Encoding" {
			continue
		}
		req.Header[k] = vs
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return resp, rb, nil
}

func singleSlash(a, b string) string {
	switch {
	case a == "":
		return b
	case a[len(a)-1] == '/' && len(b) > 0 && b[0] == '/':
		return a + b[1:]
	case a[len(a)-1] != '/' && (len(b) == 0 || b[0] != '/'):
		return a + "/" + b
	}
	return a + b
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

// decide draws the request's faults and applies the capacity model to it.
func (p *Proxy) decide(c *call) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	cfg := p.cfg
	now := p.now()
	var d decision

	p.stats.op(c.op, func(s *Counters) { s.Requests++ })
	if c.batch != nil {
		for _, t := range c.tables {
			for _, e := range c.batch[t] {
				if e.hasKey {
					p.stats.key(e.key, func(s *Counters) { s.Requests++ })
				}
			}
		}
	} else {
		for _, k := range c.keys() {
			p.stats.key(k, func(s *Counters) { s.Requests++ })
		}
	}

	sel := p.selected(c.op, c.keys())
	if sel {
		if cfg.Latency > 0 || cfg.Jitter > 0 {
			d.delay = cfg.Latency
			if cfg.Jitter > 0 {
				d.delay += time.Duration(p.rng.Int64N(int64(cfg.Jitter)))
			}
			p.countLocked(c, func(s *Counters) { s.Delayed++; s.Delay += d.delay })
		}
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
	if d.before != none {
		return d
	}

	switch {
	case c.batch != nil:
		p.shapeBatch(c, &d, p.ops == nil || p.ops[c.op], now)
	case c.hasKey && c.kind == kindWrite:
		if !p.admit(p.wcu, c.key, cfg.WCU, now) {
			d.before = throttle
			p.countLocked(c, func(s *Counters) { s.Throttled++ })
			break
		}
		p.charge(p.wcu, c.key, cfg.WCU, c.units, now, c.op, true)
	case c.hasKey && c.kind == kindRead:
		if !p.admit(p.rcu, c.key, cfg.RCU, now) {
			d.before = throttle
			p.countLocked(c, func(s *Counters) { s.Throttled++ })
		}
	}
	return d
}

// shapeBatch removes from a batch the entries whose key is over budget or
// that UnprocessedRate picks (when opSel and the entry's key is selected),
// charging write capacity for the entries kept. If nothing is left, the
// proxy answers itself: ProvisionedThroughputExceededException when every
// entry was refused for capacity (as DynamoDB does when none of a batch can
// be processed for throughput), else a response listing them all as
// unprocessed. The caller holds p.mu.
func (p *Proxy) shapeBatch(c *call, d *decision, opSel bool, now time.Time) {
	cfg := p.cfg
	write := c.op == "BatchWriteItem"
	type removal struct {
		e        entry
		capacity bool
	}
	removed := map[string][]removal{}
	kept := map[string][]json.RawMessage{}
	nRemoved, nCapacity, nKept := 0, 0, 0
	for _, t := range c.tables {
		for _, e := range c.batch[t] {
			entrySel := opSel && (p.keys == nil || e.hasKey && p.keys[e.key.PK])
			switch {
			case entrySel && p.chance(cfg.UnprocessedRate):
				removed[t] = append(removed[t], removal{e: e})
				nRemoved++
			case e.hasKey && write && !p.admit(p.wcu, e.key, cfg.WCU, now),
				e.hasKey && !write && !p.admit(p.rcu, e.key, cfg.RCU, now):
				removed[t] = append(removed[t], removal{e: e, capacity: true})
				nRemoved++
				nCapacity++
			default:
				kept[t] = append(kept[t], e.raw)
				nKept++
				if e.hasKey {
					d.fwdKeys = append(d.fwdKeys, e.key)
					if write {
						p.charge(p.wcu, e.key, cfg.WCU, e.units, now, c.op, true)
					}
				}
			}
		}
	}
	if nRemoved == 0 {
		return
	}
	if nKept == 0 && nCapacity == nRemoved {
		d.before = throttle
		p.stats.op(c.op, func(s *Counters) { s.Throttled++ })
		for _, rs := range removed {
			for _, r := range rs {
				p.stats.key(r.e.key, func(s *Counters) { s.Throttled++ })
			}
		}
		return
	}
	p.stats.op(c.op, func(s *Counters) { s.Unprocessed += nRemoved })
	d.removed = map[string][]json.RawMessage{}
	for t, rs := range removed {
		for _, r := range rs {
			d.removed[t] = append(d.removed[t], r.e.raw)
			if r.e.hasKey {
				p.stats.key(r.e.key, func(s *Counters) {
					s.Unprocessed++
					if r.capacity {
						s.Throttled++
					}
				})
			}
		}
	}
	if nKept == 0 {
		out := map[string]any{}
		if write {
			out["UnprocessedItems"] = d.removed
		} else {
			out["Responses"] = map[string]any{}
			out["UnprocessedKeys"] = c.unprocessedKeys(d.removed)
		}
		if c.wantsCapacity() {
			out["ConsumedCapacity"] = c.zeroCapacity()
		}
		d.reply = mustJSON(out)
		return
	}
	top := make(map[string]json.RawMessage, len(c.top))
	for k, v := range c.top {
		top[k] = v
	}
	if write {
		top["RequestItems"] = mustJSON(kept)
	} else {
		top["RequestItems"] = mustJSON(c.unprocessedKeys(kept))
	}
	d.forward = mustJSON(top)
}

// unprocessedKeys rebuilds BatchGetItem KeysAndAttributes for keys, keeping
// each table's projection and consistency settings.
func (c *call) unprocessedKeys(keys map[string][]json.RawMessage) map[string]map[string]json.RawMessage {
	out := map[string]map[string]json.RawMessage{}
	for t, ks := range keys {
		kaa := map[string]json.RawMessage{}
		for k, v := range c.kaa[t] {
			kaa[k] = v
		}
		kaa["Keys"] = mustJSON(ks)
		out[t] = kaa
	}
	return out
}

// afterForward charges reads and merges what the proxy removed from a batch
// into the target's answer. It returns the body to send.
func (p *Proxy) afterForward(c *call, d *decision, body []byte) []byte {
	switch c.op {
	case "GetItem", "Query":
		if !c.hasKey {
			return body
		}
		var out struct {
			Item  json.RawMessage
			Items []json.RawMessage
		}
		if json.Unmarshal(body, &out) != nil {
			return body
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
		p.charge(p.rcu, c.key, p.cfg.RCU, readUnits(size, c.consistent), p.now(), c.op, false)
		p.mu.Unlock()
		return body

	case "BatchWriteItem":
		if len(d.removed) == 0 {
			return body
		}
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
		for t, rs := range d.removed {
			un[t] = append(un[t], rs...)
		}
		top["UnprocessedItems"] = mustJSON(un)
		return mustJSON(top)

	case "BatchGetItem":
		if c.top == nil {
			return body
		}
		var top map[string]json.RawMessage
		var out struct {
			Responses       map[string][]json.RawMessage
			UnprocessedKeys map[string]struct{ Keys []json.RawMessage }
		}
		if json.Unmarshal(body, &top) != nil || json.Unmarshal(body, &out) != nil {
			return body
		}
		p.chargeBatchGet(c, d, out.Responses, out.UnprocessedKeys)
		if len(d.removed) == 0 {
			return body
		}
		var un map[string]map[string]json.RawMessage
		if raw, ok := top["UnprocessedKeys"]; ok && json.Unmarshal(raw, &un) != nil {
			return body
		}
		if un == nil {
			un = map[string]map[string]json.RawMessage{}
		}
		// The target's own leftovers for a table come first; the merged
		// entry carries the request's settings (projection, names,
		// consistency), as DynamoDB's does. (dynalite's lack them.)
		merged := map[string][]json.RawMessage{}
		for t, keys := range d.removed {
			var have []json.RawMessage
			_ = json.Unmarshal(un[t]["Keys"], &have)
			merged[t] = append(have, keys...)
		}
		for t, kaa := range c.unprocessedKeys(merged) {
			un[t] = kaa
		}
		top["UnprocessedKeys"] = mustJSON(un)
		return mustJSON(top)
	}
	return body
}

// chargeBatchGet charges each returned item to its partition key, and the
// minimum read to each forwarded key whose item was not returned (absent,
// or its partition key projected away) and not left unprocessed.
func (p *Proxy) chargeBatchGet(c *call, d *decision, resp map[string][]json.RawMessage,
	unprocessed map[string]struct{ Keys []json.RawMessage }) {
	type charge struct {
		k     Key
		units float64
	}
	var charges []charge
	for _, t := range c.tables {
		consistent := c.consistentRead(t)
		pending := map[Key]int{} // forwarded keys per partition key not yet matched
		removed := map[string]bool{}
		for _, raw := range d.removed[t] {
			removed[string(raw)] = true
		}
		for _, e := range c.batch[t] {
			if e.hasKey && !removed[string(e.raw)] {
				pending[e.key]++
			}
		}
		s := c.schemas[t]
		if s == nil {
			continue
		}
		for _, raw := range resp[t] {
			item, err := decodeItem(raw)
			if err != nil {
				continue
			}
			k, ok := s.pkOf(t, "", item)
			if !ok {
				continue
			}
			pending[k]--
			charges = append(charges, charge{k, readUnits(itemSize(item), consistent)})
		}
		for _, raw := range unprocessed[t].Keys {
			if item, err := decodeItem(raw); err == nil {
				if k, ok := s.pkOf(t, "", item); ok {
					pending[k]--
				}
			}
		}
		for _, e := range c.batch[t] {
			if e.hasKey && pending[e.key] > 0 {
				pending[e.key]--
				charges = append(charges, charge{e.key, readUnits(0, consistent)})
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for _, ch := range charges {
		p.charge(p.rcu, ch.k, p.cfg.RCU, ch.units, now, c.op, false)
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only maps, slices and RawMessages that were parsed from valid
		// JSON reach here.
		panic(errors.Join(errors.New("faultproxy: marshal"), err))
	}
	return b
}
