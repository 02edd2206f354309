package observe

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/dynashard/dynashard/internal/errs"
)

// Name is the instrumentation scope of dynashard's tracer and meter.
const Name = "github.com/dynashard/dynashard"

type key struct{}

// state is one observed logical call (or, at the root, a context that
// only carries a Tally). Calls nest: a repo Put's chunk Put is a child.
type state struct {
	parent *state
	tally  *Tally
	scope  *Scope
	span   tracing.Span
	op     string
	start  time.Time

	requests, throttled, unproc atomic.Int64
	mu                          sync.Mutex
	capacity                    Capacity
}

func from(ctx context.Context) *state {
	if ctx == nil {
		return nil
	}
	st, _ := ctx.Value(key{}).(*state)
	return st
}

// WithTally returns ctx carrying t: every request sent with it or a
// context derived from it adds to t.
func WithTally(ctx context.Context, t *Tally) context.Context {
	if t == nil {
		return ctx
	}
	st := &state{tally: t}
	if parent := from(ctx); parent != nil {
		st.parent, st.scope = parent, parent.scope
	}
	return context.WithValue(ctx, key{}, st)
}

// record adds one request's sample to st, its ancestors (each once),
// their Tallies (each once) and the metrics.
func (st *state) record(ctx context.Context, s *sample) {
	var c Capacity
	for _, cc := range s.capacity {
		c.add(units(cc.CapacityUnits, cc.ReadCapacityUnits, cc.WriteCapacityUnits, s.read))
	}
	var tallied *Tally
	for p := st; p != nil; p = p.parent {
		p.requests.Add(1)
		p.throttled.Add(s.throttled)
		p.unproc.Add(s.unproc)
		p.mu.Lock()
		p.capacity.add(c)
		p.mu.Unlock()
		if p.tally != nil && p.tally != tallied {
			p.tally.add(s)
			tallied = p.tally
		}
	}
	st.scope.request(ctx, s)
}

// Scope is the tracer and instruments of one client's providers; nil
// when the client has none (or no-op ones), and then every method is a
// no-op.
type Scope struct {
	tracer tracing.Tracer
	m      *instruments
}

// For returns the Scope of client c's TracerProvider and MeterProvider
// (a client with an Options() dynamodb.Options method, as
// *dynamodb.Client has), or nil if it has none.
func For(c any) *Scope {
	oc, ok := c.(interface{ Options() dynamodb.Options })
	if !ok {
		return nil
	}
	o := oc.Options()
	var s Scope
	switch tp := o.TracerProvider.(type) {
	case nil, tracing.NopTracerProvider, *tracing.NopTracerProvider:
	default:
		s.tracer = tp.Tracer(Name)
	}
	switch mp := o.MeterProvider.(type) {
	case nil, metrics.NopMeterProvider, *metrics.NopMeterProvider:
	default:
		s.m = newInstruments(mp.Meter(Name))
	}
	if s.tracer == nil && s.m == nil {
		return nil
	}
	return &s
}

// Call is one observed logical call; the zero Call (nothing observed)
// does nothing.
type Call struct{ st *state }

// Start opens the logical call op (e.g. "shard.Put"; its span is named
// "dynashard.shard.Put") under ctx. If neither s nor ctx observes
// anything, it returns ctx itself and the zero Call.
func (s *Scope) Start(ctx context.Context, op string) (context.Context, Call) {
	parent := from(ctx)
	if s == nil && parent == nil {
		return ctx, Call{}
	}
	st := &state{parent: parent, scope: s, op: op, start: time.Now()}
	if s == nil {
		st.scope = parent.scope
	}
	if st.scope != nil && st.scope.tracer != nil {
		ctx, st.span = st.scope.tracer.StartSpan(ctx, "dynashard."+op)
	}
	return context.WithValue(ctx, key{}, st), Call{st}
}

// On reports whether the call is observed: worth computing attributes.
func (c Call) On() bool { return c.st != nil }

// Traced reports whether the call has a span.
func (c Call) Traced() bool { return c.st != nil && c.st.span != nil }

// SetString, SetInt and SetInts set a span attribute (if traced).
func (c Call) SetString(k, v string) {
	if c.Traced() {
		c.st.span.SetProperty(k, v)
	}
}

func (c Call) SetInt(k string, v int) {
	if c.Traced() {
		c.st.span.SetProperty(k, v)
	}
}

func (c Call) SetInts(k string, v []int) {
	if c.Traced() {
		c.st.span.SetProperty(k, append([]int(nil), v...))
	}
}

// End closes the call: its span gets the requests it sent, the throttled
// attempts and unprocessed entries they met and the capacity they
// consumed, and a status (an error unless err is nil, ErrNotFound or
// ErrConflict, which are answers); its duration is recorded.
func (c Call) End(ctx context.Context, err error) {
	st := c.st
	if st == nil || st.op == "" {
		return
	}
	if st.span != nil {
		st.span.SetProperty("dynashard.requests", st.requests.Load())
		st.span.SetProperty("dynashard.throttled_attempts", st.throttled.Load())
		st.span.SetProperty("dynashard.unprocessed_entries", st.unproc.Load())
		st.mu.Lock()
		cap := st.capacity
		st.mu.Unlock()
		st.span.SetProperty("dynashard.consumed_read_units", cap.Read)
		st.span.SetProperty("dynashard.consumed_write_units", cap.Write)
		status := tracing.SpanStatusOK
		if failed(err) {
			status = tracing.SpanStatusError
			st.span.SetProperty("error.type", errType(err))
		}
		st.span.SetStatus(status)
		st.span.End()
	}
	st.scope.call(ctx, st, err)
}

// failed reports whether err is a failure, not an answer: ErrNotFound and
// ErrConflict answer the call's question.
func failed(err error) bool {
	return err != nil && !errors.Is(err, errs.NotFound) && !errors.Is(err, errs.Conflict)
}

func errType(err error) string {
	switch {
	case errors.Is(err, errs.Invalid):
		return "invalid"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return "error"
}
