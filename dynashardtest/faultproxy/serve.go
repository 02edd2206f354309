package faultproxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// serveHTTP is one request's path through the proxy: parse it, decide its
// faults and capacity, then answer it either without the target or with the
// target's answer, rewritten.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	defer p.handlers.Done()
	body, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		return // the client is gone
	}
	c := p.parse(r.Context(), r.Header, opName(r.Header.Get("X-Amz-Target")), body)
	d := p.decide(c)
	if !sleep(r.Context(), d.delay) {
		// Closing, or the client gave up. Returning would let net/http
		// answer an empty 200, which the SDK takes for success.
		reset(w)
		return
	}
	if p.answerUnforwarded(w, &d) {
		return
	}
	p.relay(w, r, c, &d)
}

// sleep waits for d and reports whether it did before ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// answerUnforwarded answers a request that d keeps from the target, and
// reports whether it did.
func (p *Proxy) answerUnforwarded(w http.ResponseWriter, d *decision) bool {
	switch {
	case d.before == resetConn:
		reset(w)
	case d.before == internalError:
		p.reply(w, http.StatusInternalServerError, internalErrorBody)
	case d.before == throttle:
		p.reply(w, http.StatusBadRequest, throttleBody)
	case d.reply != nil:
		p.reply(w, http.StatusOK, d.reply)
	default:
		return false
	}
	return true
}

// relay forwards the request (as d rewrote it) and answers with the
// target's response, after the request's bookkeeping and d's after-fault.
func (p *Proxy) relay(w http.ResponseWriter, r *http.Request, c *call, d *decision) {
	fwd := c.body
	if d.forward != nil {
		fwd = d.forward
	}
	resp, rb, err := p.forward(r, fwd)
	if err != nil {
		p.forwardFailed(w, r, err)
		return
	}
	p.countForwarded(c, d)
	p.forgetSchema(c)
	if resp.StatusCode == http.StatusOK {
		rb = p.afterForward(c, d, rb)
	}
	p.respond(w, resp, rb, d.after)
}

func (p *Proxy) forwardFailed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		// As in serveHTTP: an answer here would read as success.
		reset(w)
		return
	}
	p.reply(w, http.StatusBadGateway, mustJSON(map[string]string{
		"__type": "faultproxy#BadGateway", "message": err.Error(),
	}))
}

// countForwarded counts the request and the keys it was forwarded with: for
// a batch, only the entries the proxy did not remove.
func (p *Proxy) countForwarded(c *call, d *decision) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.op(c.op, func(s *Counters) { s.Forwarded++ })
	fwdKeys := d.fwdKeys
	if c.batch == nil {
		fwdKeys = c.keys()
	}
	for _, k := range fwdKeys {
		p.stats.key(k, func(s *Counters) { s.Forwarded++ })
	}
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
	rb, err := readBody(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, nil, err
	}
	return resp, rb, nil
}

// readBody reads a whole body into one buffer of its announced length (n,
// -1 when unknown), rather than io.ReadAll's doubling from 512 bytes: a
// batch of chunks is megabytes.
func readBody(r io.Reader, n int64) ([]byte, error) {
	if n < 0 || n > 64<<20 {
		return io.ReadAll(r)
	}
	var buf bytes.Buffer
	buf.Grow(int(n) + bytes.MinRead)
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
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

func hopByHop(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}
