package shard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// A child of the multi-process checker: one OS process (the test binary
// run again) with its own client, fault proxy and settings, that does what
// an application process would through the public API only and writes
// every call to its history file as JSON lines (mprocLine).

// mprocEnv carries a child's mprocChild, as JSON; a process that has it
// is a child.
const mprocEnv = "DYNASHARD_MPROC_CHILD"

// The roles of a child.
const (
	mprocWorker     = "worker"     // per-item calls of Kinds (Put … Load)
	mprocReader     = "reader"     // scatter reads, ordered and not, by All and by Page; Gets
	mprocResharder  = "resharder"  // Reshard to a random count, often Rebalance after
	mprocRebalancer = "rebalancer" // Rebalance, again and again
)

// mprocChild is what a child is told.
type mprocChild struct {
	Name        string // slot and instance, "w1#2"
	Index       int    // unique per instance: its values are Index×1e9 + n
	Role        string
	Endpoint    string // the relay
	Table       string
	Bases       []string
	IDs         int // ids i0 … i<IDs-1> per base
	TTL         time.Duration
	ExactlyOnce bool
	Grower      bool
	Proxy       mprocFaults
	Kinds       []linKind // a worker's calls; empty: all
	Eventual    bool      // every Get eventually consistent (a consistent one reads the record afresh)
	Until       time.Time
	Out         string // the history file
}

// mprocFaults are the faults of a child's proxy: faultproxy.Config's
// fields that a child uses, as JSON carries them.
type mprocFaults struct {
	Latency, Jitter                               time.Duration
	ResetBeforeRate, ResetAfterRate, ThrottleRate float64
	Ops                                           []string
	Seed                                          int64
}

func (f mprocFaults) config() faultproxy.Config {
	return faultproxy.Config{Latency: f.Latency, Jitter: f.Jitter, ResetBeforeRate: f.ResetBeforeRate,
		ResetAfterRate: f.ResetAfterRate, ThrottleRate: f.ThrottleRate, Ops: f.Ops, Seed: f.Seed}
}

func (c mprocChild) item(rng *rand.Rand) (base, id string) {
	return c.Bases[rng.IntN(len(c.Bases))], "i" + strconv.Itoa(rng.IntN(c.IDs))
}

// mprocLog writes a child's history, one write per line, so that a kill
// cuts at most the last line.
type mprocLog struct {
	mu   sync.Mutex
	f    *os.File
	name string
	n    int
}

func (l *mprocLog) next() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return l.name + "." + strconv.Itoa(l.n)
}

func (l *mprocLog) write(line mprocLine) {
	b, _ := json.Marshal(line)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.f.Write(append(b, '\n'))
}

func (l *mprocLog) note(format string, args ...any) {
	l.write(mprocLine{T: "note", At: time.Now().UnixNano(), Note: fmt.Sprintf(format, args...)})
}

// event tells the parent, on stdout, where the child is (a Rebalance's
// progress), so that it can pause or kill it there.
func (l *mprocLog) event(format string, args ...any) {
	fmt.Printf("MPROC %s %s\n", l.name, fmt.Sprintf(format, args...))
}

// mprocOpKey carries a call's id in its context, for mprocTag.
type mprocOpKey struct{}

// mprocTag is a client option: every attempt of every request carries
// its call's id and its context's deadline, for the relay's log.
func mprocTag(st *middleware.Stack) error {
	return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("mproc/tag",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if req, ok := in.Request.(*smithyhttp.Request); ok {
				if id, ok := ctx.Value(mprocOpKey{}).(string); ok {
					req.Header.Set(mprocOpHeader, id)
				}
				if d, ok := ctx.Deadline(); ok {
					req.Header.Set(mprocDeadlineHeader, strconv.FormatInt(d.UnixNano(), 10))
				}
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

// mprocCall returns the context of one call: its id, and the flag
// noteRetried sets. It is never cancelled mid-call (the outcome would be
// unknown for no reason).
func mprocCall(id string) (context.Context, *atomic.Bool) {
	f := new(atomic.Bool)
	return context.WithValue(context.WithValue(context.Background(), retriedKey{}, f), mprocOpKey{}, id), f
}

func mprocClient(endpoint string) *dynamodb.Client {
	creds := aws.Credentials{AccessKeyID: "dynashard", SecretAccessKey: "dynashard", Source: "mproc"}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil }),
		Retryer: retry.NewStandard(func(ro *retry.StandardOptions) {
			ro.MaxAttempts, ro.MaxBackoff, ro.RateLimiter = 4, 5*time.Millisecond, ratelimit.None
		}),
		APIOptions: []func(*middleware.Stack) error{mprocTag, noteRetried},
	})
}

// mprocChildMain is the whole life of a child.
func mprocChildMain(t *testing.T, env string) {
	var cfg mprocChild
	if err := json.Unmarshal([]byte(env), &cfg); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(cfg.Out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lg := &mprocLog{f: f, name: cfg.Name}
	p, err := faultproxy.New(cfg.Endpoint, cfg.Proxy.config())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := mprocClient(p.URL())
	l := shard.Layout{Table: cfg.Table, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2), HistoryTTL: cfg.TTL}
	var g *shard.Grower
	if cfg.Grower {
		g, err = shard.NewGrower(func(o *shard.GrowOptions) {
			o.Window, o.MinAttempts, o.Sustain, o.MaxN = 500*time.Millisecond, 5, 2, 8
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := shard.NewTable[Order](c, l, func(o *shard.Options) { o.ExactlyOnce, o.Grower = cfg.ExactlyOnce, g })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), cfg.Until)
	defer cancel()
	go mprocOrphaned()
	if g != nil {
		defer func() { lg.note("Grower: %+v", g.Stats()) }()
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Index), 5))
	switch cfg.Role {
	case mprocWorker:
		w := &mprocWorkerState{cfg: cfg, lg: lg, tbl: tbl, seen: map[string]int{}}
		for ctx.Err() == nil {
			w.one(rng)
		}
	case mprocReader:
		sc, err := scatter.New(c, l)
		if err != nil {
			t.Fatal(err)
		}
		w := &mprocWorkerState{cfg: cfg, lg: lg, tbl: tbl, seen: map[string]int{}}
		w.cfg.Kinds = []linKind{linGet}
		for ctx.Err() == nil {
			if rng.IntN(6) == 0 {
				mprocScatter(ctx, lg, sc, cfg.Bases[rng.IntN(len(cfg.Bases))], rng)
			} else {
				w.one(rng)
			}
		}
	case mprocResharder, mprocRebalancer:
		mprocReshard(ctx, lg, tbl, cfg, rng)
	default:
		t.Fatalf("unknown role %q", cfg.Role)
	}
}

// mprocOrphaned ends the child once its parent is gone (it would only
// spin against a relay that is no more).
func mprocOrphaned() {
	parent := os.Getppid()
	for range time.Tick(500 * time.Millisecond) {
		if os.Getppid() != parent {
			os.Exit(3)
		}
	}
}

// mprocWorkerState is a worker's: the last value it saw of each item,
// which its conditional writes expect.
type mprocWorkerState struct {
	cfg  mprocChild
	lg   *mprocLog
	tbl  *shard.Table[Order]
	seen map[string]int
	n    int
}

func (w *mprocWorkerState) value() int { w.n++; return w.cfg.Index*1_000_000_000 + w.n }

// one makes one call and records it.
func (w *mprocWorkerState) one(rng *rand.Rand) {
	kinds := w.cfg.Kinds
	if len(kinds) == 0 {
		kinds = []linKind{linPut, linPutNew, linUpdate, linUpdateIf, linDelete, linDeleteIf, linGet, linGet, linLoad}
	}
	kind := kinds[rng.IntN(len(kinds))]
	if kind == linLoad {
		w.load(rng)
		return
	}
	base, id := w.cfg.item(rng)
	key := base + "/" + id
	call := mprocLine{T: "call", Op: w.lg.next(), Key: key, Kind: kind, Once: w.cfg.ExactlyOnce}
	if kind != linGet {
		call.Arg = w.value()
	}
	if kind == linUpdateIf || kind == linDeleteIf {
		call.Expect = w.seen[key]
	}
	ctx, retried := mprocCall(call.Op)
	ifAmount := func(o *shard.Options) {
		o.Condition = expression.Name("amount").Equal(expression.Value(call.Expect))
	}
	consistent := !w.cfg.Eventual && rng.IntN(2) == 0
	call.At = time.Now().UnixNano()
	w.lg.write(call)
	var err error
	var o Order
	switch kind {
	case linPut:
		err = w.tbl.Put(ctx, base, Order{ID: id, Amount: call.Arg})
	case linPutNew:
		err = w.tbl.Put(ctx, base, Order{ID: id, Amount: call.Arg}, func(o *shard.Options) {
			o.Condition = expression.AttributeNotExists(expression.Name("sk"))
		})
	case linUpdate:
		_, err = w.tbl.Update(ctx, base, id, expression.Set(expression.Name("amount"), expression.Value(call.Arg)))
	case linUpdateIf:
		_, err = w.tbl.Update(ctx, base, id, expression.Set(expression.Name("amount"), expression.Value(call.Arg)), ifAmount)
	case linDelete:
		err = w.tbl.Delete(ctx, base, id)
	case linDeleteIf:
		err = w.tbl.Delete(ctx, base, id, ifAmount)
	case linGet:
		o, err = w.tbl.Get(ctx, base, id, func(op *shard.Options) { op.ConsistentRead = consistent })
	}
	ret := mprocLine{T: "ret", Op: call.Op, Key: key, At: time.Now().UnixNano()}
	if kind == linGet {
		if err != nil && !errors.Is(err, shard.ErrNotFound) {
			return // a read that failed says nothing
		}
		ret.Found, ret.Got = err == nil, o.Amount
		if err == nil {
			w.seen[key] = o.Amount
		}
		w.lg.write(ret)
		return
	}
	switch {
	case err == nil:
		if kind == linDelete || kind == linDeleteIf {
			delete(w.seen, key)
		} else {
			w.seen[key] = call.Arg
		}
	case errors.Is(err, shard.ErrConflict):
		ret.Conflict, ret.Note = true, err.Error()
	default:
		ret.Unknown = true
		ret.Note = err.Error()
	}
	ret.Retried = retried.Load() && !w.cfg.ExactlyOnce
	w.lg.write(ret)
}

// load loads 1–4 items of distinct keys in one call. Items Load reports
// as not written are unknown outcomes; its batches are at-least-once.
func (w *mprocWorkerState) load(rng *rand.Rand) {
	op := w.lg.next()
	var calls []mprocLine
	keys := map[string]bool{}
	for range 1 + rng.IntN(4) {
		base, id := w.cfg.item(rng)
		if keys[base+"/"+id] {
			continue
		}
		keys[base+"/"+id] = true
		calls = append(calls, mprocLine{T: "call", Op: op, Key: base + "/" + id, Kind: linLoad, Arg: w.value(), At: time.Now().UnixNano()})
	}
	for _, c := range calls {
		w.lg.write(c)
	}
	items := func(yield func(string, Order) bool) {
		for _, c := range calls {
			base, id, _ := strings.Cut(c.Key, "/")
			if !yield(base, Order{ID: id, Amount: c.Arg}) {
				return
			}
		}
	}
	ctx, _ := mprocCall(op)
	_, err := w.tbl.Load(ctx, items, func(o *shard.LoadOptions) { o.StallTimeout = 5 * time.Second })
	at := time.Now().UnixNano()
	failed := map[string]bool{}
	var le *shard.LoadError[Order]
	if errors.As(err, &le) {
		for _, f := range le.Failed {
			failed[f.Base+"/"+f.Item.ID] = true
		}
	}
	for _, c := range calls {
		ret := mprocLine{T: "ret", Op: op, Key: c.Key, At: at, Retried: true}
		if err != nil && (le == nil || failed[c.Key]) {
			ret.Unknown, ret.Note = true, err.Error()
		} else {
			w.seen[c.Key] = c.Arg
		}
		w.lg.write(ret)
	}
}

// mprocScatter reads base once through scatter, in one of four ways, and
// records every id the read returned twice.
func mprocScatter(ctx context.Context, lg *mprocLog, sc *scatter.Scatter, base string, rng *rand.Rand) {
	unordered := rng.IntN(2) == 0
	how := fmt.Sprintf("All(unordered=%v)", unordered)
	seen := map[string]bool{}
	saw := func(item scatter.Item) bool {
		var o Order
		if item.Unmarshal(&o) != nil {
			return false
		}
		if seen[o.ID] {
			lg.write(mprocLine{T: "dup", Key: base + "/" + o.ID, At: time.Now().UnixNano(), Note: how})
		}
		seen[o.ID] = true
		return true
	}
	opt := func(o *scatter.Options) { o.Unordered, o.PageSize = unordered, 2 }
	if rng.IntN(2) == 0 {
		for item, err := range sc.All(ctx, base, opt) {
			if err != nil || !saw(item) {
				return
			}
		}
		return
	}
	how = fmt.Sprintf("Page(unordered=%v)", unordered)
	var cur scatter.Cursor
	for {
		items, next, err := sc.Page(ctx, base, 3, cur, opt)
		if err != nil {
			return
		}
		for _, item := range items {
			if !saw(item) {
				return
			}
		}
		if next == "" {
			return
		}
		if unordered {
			// An Unordered walk of Pages may return an item again on a
			// later Page if it moved between them (scatter's package
			// doc): each call returns an item once, so each is checked
			// on its own.
			clear(seen)
		}
		cur = next
	}
}

// mprocReshard is a resharder (Reshard to a random count, then often
// Rebalance) or a rebalancer (Rebalance only). Each Rebalance tells the
// parent of its progress, where it may be paused or killed.
func mprocReshard(ctx context.Context, lg *mprocLog, tbl *shard.Table[Order], cfg mprocChild, rng *rand.Rand) {
	counts := []int{1, 2, 3, 4, 6, 8}
	for ctx.Err() == nil {
		base := cfg.Bases[rng.IntN(len(cfg.Bases))]
		if cfg.Role == mprocResharder {
			n := counts[rng.IntN(len(counts))]
			h, err := tbl.Reshard(ctx, base, n)
			lg.note("Reshard %s to %d: %v %v", base, n, h, err)
		}
		if cfg.Role == mprocRebalancer || rng.IntN(3) > 0 {
			lg.event("rebalance-start %s", base)
			p, err := tbl.Rebalance(ctx, base, func(o *shard.RebalanceOptions) {
				o.OnProgress = func(p shard.RebalanceProgress) {
					lg.event("rebalance-progress %s %d/%d", base, p.Suffix, p.Suffixes)
				}
			})
			lg.note("Rebalance %s: %+v %v", base, p, err)
		}
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
	}
}
