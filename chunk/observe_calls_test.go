package chunk

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/aws/smithy-go/tracing"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/observe"
)

// asked records the ReturnConsumedCapacity of every request a client
// sends, from a middleware in its Initialize step (the request as the
// store built it, once per call).
type asked struct {
	mu  sync.Mutex
	ops map[string][]types.ReturnConsumedCapacity
}

func (a *asked) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("chunkTestAsked",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				var rc types.ReturnConsumedCapacity
				switch p := in.Parameters.(type) {
				case *dynamodb.GetItemInput:
					rc = p.ReturnConsumedCapacity
				case *dynamodb.UpdateItemInput:
					rc = p.ReturnConsumedCapacity
				case *dynamodb.DeleteItemInput:
					rc = p.ReturnConsumedCapacity
				case *dynamodb.BatchWriteItemInput:
					rc = p.ReturnConsumedCapacity
				case *dynamodb.BatchGetItemInput:
					rc = p.ReturnConsumedCapacity
				case *dynamodb.ScanInput:
					rc = p.ReturnConsumedCapacity
				default:
					rc = "unexpected request"
				}
				a.mu.Lock()
				a.ops[awsmiddleware.GetOperationName(ctx)] = append(a.ops[awsmiddleware.GetOperationName(ctx)], rc)
				a.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
}

// take returns the distinct values asked per operation since the last
// take.
func (a *asked) take() map[string][]types.ReturnConsumedCapacity {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string][]types.ReturnConsumedCapacity{}
	for op, rcs := range a.ops {
		slices.Sort(rcs)
		out[op] = slices.Compact(rcs)
	}
	clear(a.ops)
	return out
}

// TestUnobservedAsksNothing: with no Usage in the context and no
// TracerProvider or MeterProvider on the client, no request of any entry
// point asks DynamoDB for its consumed capacity (which makes DynamoDB
// Local answer slower); with a Usage, every one asks for it per index.
func TestUnobservedAsksNothing(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		a := &asked{ops: map[string][]types.ReturnConsumedCapacity{}}
		e := &env{srv: srv, c: srv.Client(a.option), parents: srv.Table(t, "pk:S"), chunks: srv.Table(t, "ChunkKey:S")}
		st := e.store(t, func(o *Options) { o.ChunkSize, o.RetainOld = 3000, true })
		if st.obs != nil {
			t.Fatal("the test client has a TracerProvider or MeterProvider")
		}
		sweeper := e.store(t)
		sweeper.now = later(sweeper)
		key := sKey("asked")
		every := func(ctx context.Context) {
			t.Helper()
			for i := range 2 { // the second Put replaces the first
				if _, err := st.Put(ctx, key, payload(7000, uint64(i), false)); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := st.Get(ctx, key); err != nil {
				t.Fatal(err)
			}
			r, err := st.Open(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadAll(r); err != nil {
				t.Fatal(err)
			}
			r.Close()
			if _, err := sweeper.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			if err := st.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
		}
		ops := []string{"BatchGetItem", "BatchWriteItem", "DeleteItem", "GetItem", "Scan", "UpdateItem"}
		for _, tc := range []struct {
			name string
			ctx  context.Context
			want types.ReturnConsumedCapacity
		}{
			{"unobserved", context.Background(), ""},
			{"with a Usage", dynashard.WithUsage(context.Background(), &dynashard.Usage{}), types.ReturnConsumedCapacityIndexes},
		} {
			every(tc.ctx)
			want := map[string][]types.ReturnConsumedCapacity{}
			for _, op := range ops {
				want[op] = []types.ReturnConsumedCapacity{tc.want}
			}
			if diff := cmp.Diff(want, a.take()); diff != "" {
				t.Errorf("%s: ReturnConsumedCapacity by operation (-want +got):\n%s", tc.name, diff)
			}
		}
	})
}

// spans is a TracerProvider that records the spans dynashard starts
// (those named dynashard.*; the SDK's own spans are made and dropped).
type spans struct {
	mu  sync.Mutex
	all []*span
}

// span is a recorded span: its name, its parent's, the properties set on
// it and whether it ended. Guarded by its recorder's mutex.
type span struct {
	rec          *spans
	name, parent string
	props        map[any]any
	ended        bool
}

func (s *spans) Tracer(string, ...tracing.TracerOption) tracing.Tracer { return s }

func (s *spans) StartSpan(ctx context.Context, name string, _ ...tracing.SpanOption) (context.Context, tracing.Span) {
	sp := &span{rec: s, name: name, props: map[any]any{}}
	if p, ok := tracing.GetSpan(ctx); ok {
		sp.parent = p.Name()
	}
	if strings.HasPrefix(name, "dynashard.") {
		s.mu.Lock()
		s.all = append(s.all, sp)
		s.mu.Unlock()
	}
	return tracing.WithSpan(ctx, sp), sp
}

func (sp *span) Name() string                            { return sp.name }
func (sp *span) Context() tracing.SpanContext            { return tracing.SpanContext{} }
func (sp *span) AddEvent(string, ...tracing.EventOption) {}
func (sp *span) SetStatus(tracing.SpanStatus)            {}
func (sp *span) SetProperty(k, v any) {
	sp.rec.mu.Lock()
	defer sp.rec.mu.Unlock()
	sp.props[k] = v
}
func (sp *span) End() {
	sp.rec.mu.Lock()
	defer sp.rec.mu.Unlock()
	sp.ended = true
}

// take returns the spans recorded since the last take.
func (s *spans) take() []span {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]span, len(s.all))
	for i, sp := range s.all {
		out[i] = *sp
		out[i].rec = nil
	}
	s.all = nil
	return out
}

// TestSpans: with a TracerProvider on the client, each entry point is a
// span named dynashard.chunk.<Op>, ended, with the parent table, the key,
// the chunk items and the payload's length, and the requests and units of
// the call; an Open's Reader is a span of its own, from its first Read to
// the end of the payload.
func TestSpans(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		rec := &spans{}
		e := &env{srv: srv, parents: srv.Table(t, "pk:S"), chunks: srv.Table(t, "ChunkKey:S")}
		e.c = srv.Client(func(o *dynamodb.Options) { o.TracerProvider = rec })
		st := e.store(t, func(o *Options) { o.ChunkSize = 3000 })
		ctx := context.Background()
		key := sKey("traced")
		data := payload(7000, 1, false)
		info, err := st.Put(ctx, key, data)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Get(ctx, key); err != nil {
			t.Fatal(err)
		}
		r, err := st.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(r); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if err := st.Delete(ctx, key, func(o *Options) { o.ReadAttempts = -1 }); err == nil {
			t.Fatal("Delete with ReadAttempts -1 succeeded")
		}
		type view struct {
			Name, Parent string
			Ended        bool
			Props        map[any]any
		}
		var got []view
		for _, sp := range rec.take() {
			got = append(got, view{sp.name, sp.parent, sp.ended, sp.props})
		}
		base := key.String()
		props := func(requests int64, read, write float64, kv ...any) map[any]any {
			m := map[any]any{
				observe.AttrTable: e.parents, observe.AttrBase: base,
				"dynashard.requests": requests, "dynashard.throttled_attempts": int64(0), "dynashard.unprocessed_entries": int64(0),
				"dynashard.consumed_read_units": read, "dynashard.consumed_write_units": write,
			}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		}
		// Units: a span reports them only when the call asks for them,
		// which a TracerProvider makes it do: as TestUsage's Put and Get.
		parent, chunks := e.parentSize(t, key), chunkSizes(t, st, key, info.Version, data)
		want := []view{
			{"dynashard.chunk.Put", "", true, props(3, absentRead, float64(writeUnits(parent))+sumWrites(chunks), observe.AttrItems, 3, attrBytes, 7000)},
			{"dynashard.chunk.Get", "", true, props(2, readUnits(parent)+sumReads(chunks), 0, observe.AttrItems, 3, attrBytes, 7000)},
			{"dynashard.chunk.Open", "", true, props(1, readUnits(parent), 0)},
			{"dynashard.chunk.Read", "", true, props(1, sumReads(chunks), 0, observe.AttrItems, 3, attrBytes, 7000)},
			{"dynashard.chunk.Delete", "", true, props(0, 0, 0, "error.type", "invalid")},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("spans (-want +got):\n%s", diff)
		}
	})
}
