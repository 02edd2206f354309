package chunk

import (
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/observe/observetest"
)

// TestUnobservedAsksNothing: with no Usage in the context and no
// TracerProvider or MeterProvider on the client, no request of any entry
// point asks DynamoDB for its consumed capacity (which makes DynamoDB
// Local answer slower); with a Usage, every one asks for it per index.
func TestUnobservedAsksNothing(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		var a observetest.Asks
		e := &env{srv: srv, c: srv.Client(a.Option), parents: srv.Table(t, "pk:S"), chunks: srv.Table(t, "ChunkKey:S")}
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
			if diff := cmp.Diff(want, observetest.Distinct(a.Take())); diff != "" {
				t.Errorf("%s: ReturnConsumedCapacity by operation (-want +got):\n%s", tc.name, diff)
			}
		}
	})
}

// TestSpans: with a TracerProvider on the client, each entry point is a
// span named dynashard.chunk.<Op>, ended, with the parent table, the key,
// the chunk items and the payload's length, and the requests and units of
// the call; an Open's Reader is a span of its own, from its first Read to
// the end of the payload.
func TestSpans(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		rec := &observetest.Tracer{Prefix: "dynashard."}
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
		for _, sp := range rec.Take() {
			got = append(got, view{sp.Name, sp.Parent, sp.Ended, sp.Properties})
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
