package faultproxy

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/dynashard/dynashard/internal/errs"
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
	capacity capacityModel
	stats    Stats
	closed   bool
	nextID   uint64
	now      func() time.Time // replaced by tests to freeze the capacity model's clock
	closeErr error
}

// New starts a proxy on a free loopback port that forwards to target, the
// base URL of a DynamoDB-compatible endpoint ("http://127.0.0.1:8000"). It
// returns an error matching dynashard.ErrInvalid for a target that is not
// an http(s) URL or an invalid Config, naming the field.
func New(target string, cfg Config) (*Proxy, error) {
	if err := check(target, cfg); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	return NewListener(ln, target, cfg)
}

// NewListener is New on a listener the caller opened, to choose the
// address (the dynashard proxy command's -listen). The proxy owns ln from
// then on: Close closes it, and so does a failed NewListener. URL names the
// listener's address, with 127.0.0.1 (or [::1] for a tcp6 listener) for an
// unspecified IP such as that of ":8000".
func NewListener(ln net.Listener, target string, cfg Config) (*Proxy, error) {
	if err := check(target, cfg); err != nil {
		ln.Close()
		return nil, err
	}
	u, _ := parseTarget(target) // check parsed it
	ctx, cancel := context.WithCancel(context.Background())
	tr := newTransport()
	p := &Proxy{
		target:    u,
		url:       "http://" + dialAddr(ln.Addr()),
		ln:        ln,
		transport: tr,
		client:    &http.Client{Transport: tr},
		ctx:       ctx,
		cancel:    cancel,
		served:    make(chan struct{}),
		schemas:   schemaCache{m: map[string]*tableSchema{}},
		capacity:  newKeyBuckets(), // the zero Config's; setLocked switches
		stats:     newStats(),
		now:       time.Now,
	}
	p.setLocked(cfg)
	p.serve()
	return p, nil
}

// check reports an invalid target or Config as invalid input.
func check(target string, cfg Config) error {
	if _, err := parseTarget(target); err != nil {
		return fmt.Errorf("%w: %w", err, errs.Invalid)
	}
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("%w: %w", err, errs.Invalid)
	}
	return nil
}

// dialAddr is the host:port a client dials to reach a listener on a: an
// unspecified IP becomes the loopback address of its family.
func dialAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return a.String()
	}
	ip := net.IPv4(127, 0, 0, 1)
	if a.Network() == "tcp6" {
		ip = net.IPv6loopback
	}
	return (&net.TCPAddr{IP: ip, Port: ta.Port}).String()
}

func parseTarget(target string) (*url.URL, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q: want http(s)://host:port", target)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}, nil
}

func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		// The proxy must see the bodies it charges and rewrites.
		DisableCompression: true,
	}
}

// serve starts the HTTP server on p.ln. Its handlers' contexts derive from
// p.ctx, so that Close aborts them.
func (p *Proxy) serve() {
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		BaseContext:       func(net.Listener) context.Context { return p.ctx },
		ReadHeaderTimeout: time.Minute,
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(p.ln) // returns http.ErrServerClosed after Close
	}()
}

// URL returns the proxy's base URL, to be used as the client's endpoint.
func (p *Proxy) URL() string { return p.url }

// Set replaces the configuration and reseeds the random source from
// cfg.Seed. Capacity already consumed stays charged: each key's (or
// partition's) balance is kept, capped at the new bucket depth; a change of
// Model starts the new model afresh. An invalid cfg is rejected and the old
// configuration kept, with an error matching dynashard.ErrInvalid.
func (p *Proxy) Set(cfg Config) error {
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("%w: %w", err, errs.Invalid)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(cfg)
	return nil
}

func (p *Proxy) setLocked(cfg Config) {
	// The caller keeps its slices and may change them after Set returns.
	cfg.Ops = append([]string(nil), cfg.Ops...)
	cfg.Keys = append([]string(nil), cfg.Keys...)
	cfg.Partition.Tables = maps.Clone(cfg.Partition.Tables)
	if cfg.Model != p.cfg.Model {
		p.capacity = modelOf(cfg.Model)
	}
	p.cfg = cfg
	p.ops, p.keys = setOf(cfg.Ops), setOf(cfg.Keys)
	seed := uint64(cfg.Seed)
	p.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p.capacity.configure(cfg, p.now())
}

// setOf returns nil for no strings, which selected reads as "all".
func setOf(ss []string) map[string]bool {
	if len(ss) == 0 {
		return nil
	}
	m := make(map[string]bool, len(ss))
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// Stats returns a copy of the counters, and of the partition model's
// tables.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats.clone()
	s.Tables = p.capacity.snapshot(p.now())
	return s
}

// ResetStats zeroes the counters, the partition model's included. Capacity
// balances, partitions and stored bytes are not affected.
func (p *Proxy) ResetStats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats = newStats()
	p.capacity.resetStats()
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
