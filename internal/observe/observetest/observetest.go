// Package observetest holds the recorders dynashard's own tests use to
// watch what the library does through internal/observe: a [Tracer] that
// records every span started through it, an [Asks] that records the
// ReturnConsumedCapacity of every request a client sends, and DynamoDB's
// capacity rules ([WriteUnits], [ReadUnits]) to compute expected figures.
//
// It is for dynashard's tests only; no library code imports it.
package observetest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/aws/smithy-go/tracing"
)

// Tracer is a tracing.TracerProvider (set it as a client's
// TracerProvider) and its own Tracer: it records the spans started
// through it whose names begin with Prefix. The zero value records every
// span, the SDK's included. Safe for concurrent use.
type Tracer struct {
	// Prefix, if set, keeps only the spans whose names begin with it
	// ("dynashard."): the others are started and carried in the context
	// as usual, and dropped.
	Prefix string

	mu     sync.Mutex
	spans  []*span
	nextID uint64
}

var (
	_ tracing.TracerProvider = (*Tracer)(nil)
	_ tracing.Tracer         = (*Tracer)(nil)
)

// Span is a copy of a recorded span. It carries an unexported identity
// (for [Tracer.Children]): compare Spans field by field.
type Span struct {
	Name       string
	Parent     string // the name of the span it was started under; "" for a root
	Properties map[any]any
	Status     tracing.SpanStatus
	Ended      bool

	id, parent uint64
}

// span is a live span; its fields are guarded by its Tracer's mutex.
type span struct {
	t   *Tracer
	rec Span
}

// Tracer returns t.
func (t *Tracer) Tracer(string, ...tracing.TracerOption) tracing.Tracer { return t }

// StartSpan starts the span name under the span in ctx, if any.
func (t *Tracer) StartSpan(ctx context.Context, name string, _ ...tracing.SpanOption) (context.Context, tracing.Span) {
	sp := &span{t: t, rec: Span{Name: name, Properties: map[any]any{}}}
	if p, ok := tracing.GetSpan(ctx); ok {
		sp.rec.Parent = p.Name()
		if ps, ok := p.(*span); ok {
			sp.rec.parent = ps.rec.id
		}
	}
	t.mu.Lock()
	t.nextID++
	sp.rec.id = t.nextID
	if strings.HasPrefix(name, t.Prefix) {
		t.spans = append(t.spans, sp)
	}
	t.mu.Unlock()
	return tracing.WithSpan(ctx, sp), sp
}

// Spans returns copies of the spans recorded since the last Take, in the
// order they started.
func (t *Tracer) Spans() []Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.copies()
}

// Take returns what Spans does and forgets those spans.
func (t *Tracer) Take() []Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.copies()
	t.spans = nil
	return out
}

// copies copies t.spans; t.mu is held.
func (t *Tracer) copies() []Span {
	out := make([]Span, len(t.spans))
	for i, sp := range t.spans {
		out[i] = sp.rec
		out[i].Properties = maps.Clone(sp.rec.Properties)
	}
	return out
}

// Named returns the spans of Spans called name.
func (t *Tracer) Named(name string) []Span {
	return slices.DeleteFunc(t.Spans(), func(sp Span) bool { return sp.Name != name })
}

// Children returns the spans of Spans started under parent itself (not
// under another span of the same name).
func (t *Tracer) Children(parent Span) []Span {
	return slices.DeleteFunc(t.Spans(), func(sp Span) bool { return sp.parent == 0 || sp.parent != parent.id })
}

func (sp *span) Name() string                            { return sp.rec.Name }
func (sp *span) Context() tracing.SpanContext            { return tracing.SpanContext{} }
func (sp *span) AddEvent(string, ...tracing.EventOption) {}

func (sp *span) SetStatus(s tracing.SpanStatus) {
	sp.t.mu.Lock()
	defer sp.t.mu.Unlock()
	sp.rec.Status = s
}

func (sp *span) SetProperty(k, v any) {
	sp.t.mu.Lock()
	defer sp.t.mu.Unlock()
	sp.rec.Properties[k] = v
}

func (sp *span) End() {
	sp.t.mu.Lock()
	defer sp.t.mu.Unlock()
	sp.rec.Ended = true
}

// NoField is what Asks records for a request that has no
// ReturnConsumedCapacity field (DescribeTable, CreateTable, …).
const NoField types.ReturnConsumedCapacity = "(no ReturnConsumedCapacity field)"

// Asks records the ReturnConsumedCapacity of every request sent by a
// client built with its Option, once per SDK call (retries are not
// recorded again), as the caller built the request. The zero value is
// ready to use; safe for concurrent use.
type Asks struct {
	mu  sync.Mutex
	ops map[string][]types.ReturnConsumedCapacity
}

// Option is a client option (for dynamodb.NewFromConfig or a test
// server's Client) adding a recording middleware to the client's
// Initialize step.
func (a *Asks) Option(o *dynamodb.Options) {
	id := fmt.Sprintf("observetest.Asks@%p", a) // one per Asks, so that two can watch a client
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(id,
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				a.record(awsmiddleware.GetOperationName(ctx), returnConsumedCapacity(in.Parameters))
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
}

func (a *Asks) record(op string, rc types.ReturnConsumedCapacity) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ops == nil {
		a.ops = map[string][]types.ReturnConsumedCapacity{}
	}
	a.ops[op] = append(a.ops[op], rc)
}

// returnConsumedCapacity is the field of the request in, or NoField.
func returnConsumedCapacity(in any) types.ReturnConsumedCapacity {
	v := reflect.ValueOf(in)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return NoField
	}
	f := v.Elem().FieldByName("ReturnConsumedCapacity")
	if !f.IsValid() || f.Kind() != reflect.String {
		return NoField
	}
	return types.ReturnConsumedCapacity(f.String())
}

// Take returns the values recorded since the last Take by operation name
// ("GetItem"), one per request in the order sent, and forgets them. An
// operation with no request has no key.
func (a *Asks) Take() map[string][]types.ReturnConsumedCapacity {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.ops
	a.ops = nil
	if out == nil {
		out = map[string][]types.ReturnConsumedCapacity{}
	}
	return out
}

// Distinct returns asked (as Take returns it) with each operation's
// values sorted and each value once.
func Distinct(asked map[string][]types.ReturnConsumedCapacity) map[string][]types.ReturnConsumedCapacity {
	out := make(map[string][]types.ReturnConsumedCapacity, len(asked))
	for op, rcs := range asked {
		rcs = slices.Clone(rcs)
		slices.Sort(rcs)
		out[op] = slices.Compact(rcs)
	}
	return out
}

// WriteUnits is what DynamoDB charges for writing (or deleting) an item
// of size bytes: one unit per started KB, at least one (deleting an
// absent item costs one).
func WriteUnits(size int) float64 { return float64(max(1, (size+1023)/1024)) }

// ReadUnits is what DynamoDB charges for reading an item of size bytes
// with GetItem or BatchGetItem: one unit per started 4 KB strongly
// consistent, half that eventually consistent, at least that minimum (an
// absent item costs it).
func ReadUnits(size int, consistent bool) float64 {
	u := float64(max(1, (size+4095)/4096))
	if !consistent {
		u /= 2
	}
	return u
}
