package shard_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers a child's client puts on every request of a call: the call's id,
// and the deadline of the request's context (unix nanoseconds), if any.
const (
	mprocOpHeader       = "X-Mproc-Op"
	mprocDeadlineHeader = "X-Mproc-Deadline"
)

// mprocRelay is the only way to the server: every child's fault proxy
// forwards to it. It forwards each request it receives to its end, as a
// server would, even if its client gives up or dies meanwhile, and logs
// per call when the server answered each of its requests. A request the
// server has answered was applied by then, if ever; one it has not
// answered may still be. So a call whose outcome is unknown stays open
// until the server answered its last request.
type mprocRelay struct {
	srv    *httptest.Server
	target string
	client *http.Client

	mu       sync.Mutex
	idle     *sync.Cond
	inflight int
	last     map[string]int64 // call id → when the server answered its last request
	lost     map[string]bool  // call id → a request whose answer never came (its fate is unknown forever)
	late     []string         // requests that arrived after their context's deadline
	sent     map[string]int   // call id → requests that reached the server
	lateCall map[string]bool  // call id → one of its requests arrived after its deadline
}

func newMprocRelay(target string) *mprocRelay {
	r := &mprocRelay{
		target: strings.TrimRight(target, "/"),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		last:   map[string]int64{}, lost: map[string]bool{},
		sent: map[string]int{}, lateCall: map[string]bool{},
	}
	r.idle = sync.NewCond(&r.mu)
	r.srv = httptest.NewServer(r)
	return r
}

func (r *mprocRelay) URL() string { return r.srv.URL }

func (r *mprocRelay) Close() { r.srv.CloseClientConnections(); r.srv.Close() }

func (r *mprocRelay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return // not received whole: never forwarded
	}
	op := req.Header.Get(mprocOpHeader)
	arrived := time.Now().UnixNano()
	r.mu.Lock()
	r.inflight++
	r.sent[op]++
	if d, err := strconv.ParseInt(req.Header.Get(mprocDeadlineHeader), 10, 64); err == nil && arrived > d {
		r.late = append(r.late, fmt.Sprintf("%s %s %v late", op, req.Header.Get("X-Amz-Target"), time.Duration(arrived-d)))
		r.lateCall[op] = true
	}
	r.mu.Unlock()
	resp, rb, err := r.forward(req, body)
	answered := time.Now().UnixNano()
	r.mu.Lock()
	if op != "" {
		r.last[op] = max(r.last[op], answered)
		if err != nil {
			r.lost[op] = true
		}
	}
	if r.inflight--; r.inflight == 0 {
		r.idle.Broadcast()
	}
	r.mu.Unlock()
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	for k, vs := range resp.Header {
		if k != "Content-Length" && k != "Connection" {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(rb)
}

// forward sends the request to the server, whatever the client does.
func (r *mprocRelay) forward(req *http.Request, body []byte) (*http.Response, []byte, error) {
	out, err := http.NewRequestWithContext(context.WithoutCancel(req.Context()), req.Method, r.target+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, vs := range req.Header {
		if k != "Connection" && k != "Content-Length" && k != "Accept-Encoding" {
			out.Header[k] = vs
		}
	}
	resp, err := r.client.Do(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	return resp, rb, err
}

// wait returns once no request is in flight: with every child gone, the
// log is complete.
func (r *mprocRelay) wait() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.inflight > 0 {
		r.idle.Wait()
	}
}

// answered is when the server answered call op's last request (0: none
// reached it); open is true if one never got an answer.
func (r *mprocRelay) answered(op string) (last int64, open bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[op], r.lost[op]
}

// reached is how many requests of call op reached the server, and
// whether one of them arrived after its context's deadline: sent within
// its fence, it was held on the way (by the fault proxy of a paused
// process, or its Latency) past the fence, which the protocol assumes
// does not happen (see "Across processes" in the package doc).
func (r *mprocRelay) reached(op string) (n int, late bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent[op], r.lateCall[op]
}
