// Package s3fault is a small HTTP proxy in front of an S3-compatible
// server that makes chosen requests fail, the S3 sibling of
// dynashardtest/faultproxy: a 500 InternalError instead of the answer, or
// a connection reset after part of the request body has been read (a
// network failure mid-upload). Everything else passes through unchanged
// (the Host header too, so SigV4 signatures stay valid).
package s3fault

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
)

// Op classifies an S3 request by its method and query.
type Op string

// The operations a rule can match.
const (
	PutObject      Op = "PutObject"
	CreateUpload   Op = "CreateMultipartUpload"
	UploadPart     Op = "UploadPart"
	CompleteUpload Op = "CompleteMultipartUpload"
	GetObject      Op = "GetObject"
	HeadObject     Op = "HeadObject"
	DeleteObjects  Op = "DeleteObjects"
	DeleteObject   Op = "DeleteObject"
	ListObjects    Op = "ListObjectsV2"
	Other          Op = "Other"
)

// Fault is what happens to a matched request.
type Fault int

const (
	// Fail answers 500 InternalError without forwarding the request.
	Fail Fault = iota
	// Reset reads up to 64 KiB of the request body, then resets the
	// connection without answering.
	Reset
)

// Proxy forwards to one server, injecting faults. Close stops it.
type Proxy struct {
	URL string // http://127.0.0.1:port

	srv *http.Server
	rp  *httputil.ReverseProxy

	mu     sync.Mutex
	rules  map[Op]*rule
	counts map[Op]int // requests seen, by operation
	hits   map[Op]int // faults injected, by operation
}

type rule struct {
	fault Fault
	left  int // faults still to inject; negative: every request
}

// Start starts a proxy for target on a free loopback port.
func Start(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("s3fault: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("s3fault: %w", err)
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), rules: map[Op]*rule{}, counts: map[Op]int{}, hits: map[Op]int{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // the signature covers it
		},
		ErrorLog: nil,
	}
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(ln)
	return p, nil
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error { return p.srv.Close() }

// Inject makes the next n requests of op fail with f; n < 0: every one,
// until Clear.
func (p *Proxy) Inject(op Op, f Fault, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules[op] = &rule{fault: f, left: n}
}

// Clear removes every rule.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.rules)
}

// Count returns how many requests of op the proxy has seen, and how many
// of them it made fail.
func (p *Proxy) Count(op Op) (seen, faulted int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[op], p.hits[op]
}

// Classify names the S3 operation of r (path-style addressing).
func Classify(r *http.Request) Op {
	q := r.URL.Query()
	switch r.Method {
	case http.MethodPut:
		if q.Has("uploadId") {
			return UploadPart
		}
		return PutObject
	case http.MethodPost:
		switch {
		case q.Has("delete"):
			return DeleteObjects
		case q.Has("uploads"):
			return CreateUpload
		case q.Has("uploadId"):
			return CompleteUpload
		}
	case http.MethodGet:
		if q.Get("list-type") == "2" {
			return ListObjects
		}
		return GetObject
	case http.MethodHead:
		return HeadObject
	case http.MethodDelete:
		return DeleteObject
	}
	return Other
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := Classify(r)
	p.mu.Lock()
	p.counts[op]++
	rl := p.rules[op]
	hit := rl != nil && rl.left != 0
	if hit {
		rl.left--
		p.hits[op]++
	}
	p.mu.Unlock()
	if !hit {
		p.rp.ServeHTTP(w, r)
		return
	}
	switch rl.fault {
	case Reset:
		io.CopyN(io.Discard, r.Body, 64<<10)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0) // RST, not FIN
				}
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	default:
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected by s3fault</Message></Error>`)
	}
}
