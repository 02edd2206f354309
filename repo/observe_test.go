package repo_test

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/middleware"
	"github.com/aws/smithy-go/tracing"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

// Capacity as DynamoDB charges it: a write unit per started KB of the
// item written (the larger of before and after), an eventually consistent
// read half a unit per started 4 KB of the item read (a strongly
// consistent one twice that; an absent item is charged as the smallest),
// and a Query half a unit per started 4 KB of all the items it read
// together. The sizes are the stored items', read back by the test and
// sized by internal/ddbsize.

func writeUnits(n int) float64      { return float64((n + 1023) / 1024) }
func readUnits(n int) float64       { return float64((n+4095)/4096) / 2 }
func consistentUnits(n int) float64 { return 2 * readUnits(n) }

// absentRead is a strongly consistent read of no item.
var absentRead = consistentUnits(1)

// stored is the sizes of a table's items: the layout record's (one base)
// and the others' by their sort-key value.
type stored struct {
	record int
	items  map[string]int
}

// sizes scans table with c, consistently, and sizes what it holds.
func sizes(t *testing.T, c *dynamodb.Client, table, sortKey string) stored {
	t.Helper()
	s := stored{items: map[string]int{}}
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true)})
	if err != nil || out.LastEvaluatedKey != nil {
		t.Fatalf("Scan %s: %v (more than a page: %v)", table, err, out != nil && out.LastEvaluatedKey != nil)
	}
	for _, it := range out.Items {
		n, err := ddbsize.ItemSize(it)
		if err != nil {
			t.Fatal(err)
		}
		if shard.IsRecord(it) {
			s.record = n
			continue
		}
		id := "?"
		if sk, ok := it[sortKey].(*types.AttributeValueMemberS); ok {
			id = sk.Value
		}
		s.items[id] = n
	}
	return s
}

// sum is the units of several items, each rounded by units.
func sum(units func(int) float64, sizes map[string]int) float64 {
	var u float64
	for _, n := range sizes {
		u += units(n)
	}
	return u
}

type cost struct {
	tables   map[string]dynashard.Capacity
	requests int64
}

// measure runs call with a Usage in its context, expecting its error to
// match wantErr (nil: none), and compares what the Usage reports.
func measure(t *testing.T, what string, wantErr error, want cost, call func(ctx context.Context) error) {
	t.Helper()
	var u dynashard.Usage
	if err := call(dynashard.WithUsage(context.Background(), &u)); !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		t.Fatalf("%s: %v, want %v", what, err, wantErr)
	}
	check(t, what, &u, want)
}

// check compares what u reports with want.
func check(t *testing.T, what string, u *dynashard.Usage, want cost) {
	t.Helper()
	t.Logf("%s: %v, %d requests", what, u.Tables(), u.Requests())
	if want.tables == nil {
		want.tables = map[string]dynashard.Capacity{}
	}
	if diff := cmp.Diff(want.tables, u.Tables()); diff != "" {
		t.Errorf("%s: capacity per table (-want +got):\n%s", what, diff)
	}
	if got := u.Requests(); got != want.requests {
		t.Errorf("%s: Requests() = %d, want %d", what, got, want.requests)
	}
}

// TestUsage runs every entry point of a Repo with a dynashard.Usage and
// checks the exact capacity the server reports, from the sizes of the
// items stored, and the requests sent. One shard (Hash(1)): every item has
// one key. The layout record is read and written by the base's first
// Put, and then read from shard's cache (DefaultHistoryTTL, 10 s).
func TestUsage(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c := s.Client()
		l := newTable(t, s, 1)
		T := l.Table
		r := newRepo[Reply](t, c, l)
		a := Reply{ID: "a", Author: "ann", Body: make([]byte, 2500)}
		put := func(v Reply) func(context.Context) error {
			return func(ctx context.Context) error { _, err := r.Put(ctx, "b", v); return err }
		}
		// The first Put of base b: the record read (absent) and written,
		// then the item.
		var u dynashard.Usage
		if _, err := r.Put(dynashard.WithUsage(context.Background(), &u), "b", a); err != nil {
			t.Fatal(err)
		}
		st := sizes(t, c, T, l.SortKey)
		if st.record == 0 || len(st.items) != 1 {
			t.Fatalf("stored: %+v, want the record and one item", st)
		}
		check(t, "first Put", &u, cost{map[string]dynashard.Capacity{
			T: {Read: absentRead, Write: writeUnits(st.record) + writeUnits(st.items["a"])},
		}, 3})
		measure(t, "Put again", nil, cost{map[string]dynashard.Capacity{T: {Write: writeUnits(st.items["a"])}}, 1}, put(a))
		// A Create of an id that exists fails its condition: one request,
		// and no capacity reported (DynamoDB charges the write, but an
		// error carries no ConsumedCapacity).
		measure(t, "Create existing", repo.ErrConflict, cost{nil, 1}, func(ctx context.Context) error {
			_, err := r.Create(ctx, "b", a)
			return err
		})
		bItem := Reply{ID: "b", Author: "bob", Body: make([]byte, 5000)}
		u.Reset()
		if _, err := r.Create(dynashard.WithUsage(context.Background(), &u), "b", bItem); err != nil {
			t.Fatal(err)
		}
		st = sizes(t, c, T, l.SortKey)
		check(t, "Create", &u, cost{map[string]dynashard.Capacity{T: {Write: writeUnits(st.items["b"])}}, 1})
		get := func(id string, optFns ...func(*repo.Options)) func(context.Context) error {
			return func(ctx context.Context) error { _, err := r.Get(ctx, "b", id, optFns...); return err }
		}
		measure(t, "Get", nil, cost{map[string]dynashard.Capacity{T: {Read: readUnits(st.items["b"])}}, 1}, get("b"))
		// A consistent Get reads the item consistently, at the keys of the
		// base's cached history (no record read: see shard's placed.go).
		measure(t, "Get consistent", nil, cost{map[string]dynashard.Capacity{T: {Read: consistentUnits(st.items["b"])}}, 1},
			get("b", func(o *repo.Options) { o.ConsistentRead = true }))
		measure(t, "Get absent", repo.ErrNotFound, cost{map[string]dynashard.Capacity{T: {Read: readUnits(1)}}, 1}, get("none"))
		// List, All and Count: one Query of the one shard, charged by the
		// two items' bytes together.
		query := cost{map[string]dynashard.Capacity{T: {Read: readUnits(st.items["a"] + st.items["b"])}}, 1}
		measure(t, "List", nil, query, func(ctx context.Context) error {
			items, _, err := r.List(ctx, "b", 10, "")
			if err == nil && len(items) != 2 {
				t.Errorf("List: %d items, want 2", len(items))
			}
			return err
		})
		measure(t, "All", nil, query, func(ctx context.Context) error {
			for _, err := range r.All(ctx, "b") {
				if err != nil {
					return err
				}
			}
			return nil
		})
		measure(t, "Count", nil, query, func(ctx context.Context) error {
			_, err := r.Count(ctx, "b")
			return err
		})
		measure(t, "Delete", nil, cost{map[string]dynashard.Capacity{T: {Write: writeUnits(st.items["b"])}}, 1}, func(ctx context.Context) error {
			return r.Delete(ctx, "b", "b")
		})
	})
}

// TestUsageLarge: with a LargeField the item is the chunk store's parent,
// read, switched and deleted through shard's placement, and its value's
// chunks live in the chunk table.
func TestUsageLarge(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c := s.Client()
		l := newTable(t, s, 1)
		// 3,000-byte chunks: a 7,000-byte body is three chunk items.
		st := newStore(t, s, c, l, func(o *chunk.Options) { o.ChunkSize = 3000 })
		r := newRepo[Reply](t, c, l, large("body", st))
		T, C := l.Table, chunkTable(t, st)
		v := Reply{ID: "big", Author: "ann", Body: make([]byte, 7000)}
		// The first Put of the base records it (the record read, absent,
		// and written), then the store reads the item consistently
		// (absent), writes the chunks in one BatchWriteItem and creates
		// the item with its flip.
		var u dynashard.Usage
		if _, err := r.Put(dynashard.WithUsage(context.Background(), &u), "b", v); err != nil {
			t.Fatal(err)
		}
		items := sizes(t, c, T, l.SortKey)
		if items.record == 0 || len(items.items) != 1 {
			t.Fatalf("stored: %+v, want the record and one item", items)
		}
		chunkSizes := chunkItemSizes(t, c, C)
		if len(chunkSizes) != 3 {
			t.Fatalf("%d chunk items, want 3", len(chunkSizes))
		}
		var chunkWrites, chunkReads float64
		for _, n := range chunkSizes {
			chunkWrites += writeUnits(n)
			chunkReads += readUnits(n)
		}
		item := items.items["big"]
		check(t, "large Put", &u, cost{map[string]dynashard.Capacity{
			T: {Read: 2 * absentRead, Write: writeUnits(items.record) + writeUnits(item)},
			C: {Write: chunkWrites},
		}, 5})
		// Get: the item read eventually consistently, its chunks in one
		// BatchGetItem.
		measure(t, "large Get", nil, cost{map[string]dynashard.Capacity{
			T: {Read: readUnits(item)}, C: {Read: chunkReads},
		}, 2}, func(ctx context.Context) error {
			got, err := r.Get(ctx, "b", "big")
			if err == nil && len(got.Body) != len(v.Body) {
				t.Errorf("Get: %d bytes, want %d", len(got.Body), len(v.Body))
			}
			return err
		})
		// List: the Query returns the item with its chunk pointers, then
		// the chunks are read as Get reads them.
		measure(t, "large List", nil, cost{map[string]dynashard.Capacity{
			T: {Read: readUnits(item)}, C: {Read: chunkReads},
		}, 2}, func(ctx context.Context) error {
			_, _, err := r.List(ctx, "b", 10, "")
			return err
		})
		// SkipLarge: the Query alone.
		measure(t, "List SkipLarge", nil, cost{map[string]dynashard.Capacity{T: {Read: readUnits(item)}}, 1}, func(ctx context.Context) error {
			_, _, err := r.List(ctx, "b", 10, "", func(o *repo.Options) { o.SkipLarge = true })
			return err
		})
		// Delete: the item read consistently, deleted, then its chunks.
		measure(t, "large Delete", nil, cost{map[string]dynashard.Capacity{
			T: {Read: consistentUnits(item), Write: writeUnits(item)}, C: {Write: chunkWrites},
		}, 3}, func(ctx context.Context) error { return r.Delete(ctx, "b", "big") })
	})
}

// chunkTable returns the name of st's chunk table, from the input
// ChunkTableInput builds.
func chunkTable(t *testing.T, st *chunk.Store) string {
	t.Helper()
	in, err := st.ChunkTableInput()
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(in.TableName)
}

// chunkItemSizes sizes every item of chunk table table.
func chunkItemSizes(t *testing.T, c *dynamodb.Client, table string) []int {
	t.Helper()
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true)})
	if err != nil || out.LastEvaluatedKey != nil {
		t.Fatalf("Scan %s: %v", table, err)
	}
	var sizes []int
	for _, it := range out.Items {
		n, err := ddbsize.ItemSize(it)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// meter records the additions to dynashard's cache counters, through
// the MeterProvider provider{m}; every other instrument is the no-op one.
type meter struct {
	mu        sync.Mutex
	lookups   map[string]int64 // by result
	evictions int64
}

func newMeter() *meter { return &meter{lookups: map[string]int64{}} }

type provider struct{ m *meter }

func (p provider) Meter(string, ...metrics.MeterOption) metrics.Meter {
	return recordingMeter{metrics.NopMeterProvider{}.Meter(""), p.m}
}

// recordingMeter is the no-op meter but for its Int64Counters.
type recordingMeter struct {
	metrics.Meter
	m *meter
}

func (rm recordingMeter) Int64Counter(name string, _ ...metrics.InstrumentOption) (metrics.Int64Counter, error) {
	return counter{rm.m, name}, nil
}

type counter struct {
	m    *meter
	name string
}

func (c counter) Add(_ context.Context, n int64, opts ...metrics.RecordMetricOption) {
	var o metrics.RecordMetricOptions
	for _, f := range opts {
		f(&o)
	}
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	switch c.name {
	case observe.MetricCache:
		result, _ := o.Properties.Get(observe.AttrResult).(string)
		c.m.lookups[result] += n
	case observe.MetricCacheEvictions:
		c.m.evictions += n
	}
}

func (m *meter) counts() (map[string]int64, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.lookups), m.evictions
}

// TestCacheMetrics: with a MeterProvider on the client, every Get through
// the cache counts a lookup, hit or miss, and the entries its fill
// evicted; a hit sends no request. CacheStats agrees.
func TestCacheMetrics(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		m := newMeter()
		c := s.Client(func(o *dynamodb.Options) { o.MeterProvider = provider{m} })
		l := newTable(t, s, 1)
		r := newRepo[Reply](t, c, l, func(o *repo.Options) { o.CacheEntries = 1 })
		ctx := context.Background()
		for _, id := range []string{"a", "b"} {
			if _, err := r.Put(ctx, "b", Reply{ID: id, Author: "ann"}); err != nil {
				t.Fatal(err)
			}
		}
		st := sizes(t, c, l.Table, l.SortKey)
		get := func(id string) func(context.Context) error {
			return func(ctx context.Context) error { _, err := r.Get(ctx, "b", id); return err }
		}
		// A miss fills the cache with a consistent read of the item.
		measure(t, "miss", nil, cost{map[string]dynashard.Capacity{l.Table: {Read: consistentUnits(st.items["a"])}}, 1}, get("a"))
		measure(t, "hit", nil, cost{nil, 0}, get("a"))
		// One entry: filling b evicts a.
		measure(t, "miss evicting", nil, cost{map[string]dynashard.Capacity{l.Table: {Read: consistentUnits(st.items["b"])}}, 1}, get("b"))
		lookups, evictions := m.counts()
		if diff := cmp.Diff(map[string]int64{"hit": 1, "miss": 2}, lookups); diff != "" || evictions != 1 {
			t.Errorf("lookups (-want +got):\n%s\nevictions %d, want 1", diff, evictions)
		}
		if got, want := r.CacheStats(), (repo.CacheStats{Hits: 1, Misses: 2, Evictions: 1, Entries: 1, Bytes: int64(st.items["b"])}); got != want {
			t.Errorf("CacheStats() = %+v, want %+v", got, want)
		}
	})
}

// tracer records the names, parents and properties of the spans
// dynashard starts (those named dynashard.*).
type tracer struct {
	mu    sync.Mutex
	spans []*recorded
}

type recorded struct {
	t            *tracer
	name, parent string
	props        map[any]any
	ended        bool
}

func (tr *tracer) Tracer(string, ...tracing.TracerOption) tracing.Tracer { return tr }

func (tr *tracer) StartSpan(ctx context.Context, name string, _ ...tracing.SpanOption) (context.Context, tracing.Span) {
	sp := &recorded{t: tr, name: name, props: map[any]any{}}
	if p, ok := tracing.GetSpan(ctx); ok {
		sp.parent = p.Name()
	}
	if strings.HasPrefix(name, "dynashard.") {
		tr.mu.Lock()
		tr.spans = append(tr.spans, sp)
		tr.mu.Unlock()
	}
	return tracing.WithSpan(ctx, sp), sp
}

func (sp *recorded) Name() string                            { return sp.name }
func (sp *recorded) Context() tracing.SpanContext            { return tracing.SpanContext{} }
func (sp *recorded) AddEvent(string, ...tracing.EventOption) {}
func (sp *recorded) SetStatus(tracing.SpanStatus)            {}
func (sp *recorded) SetProperty(k, v any) {
	sp.t.mu.Lock()
	defer sp.t.mu.Unlock()
	sp.props[k] = v
}
func (sp *recorded) End() {
	sp.t.mu.Lock()
	defer sp.t.mu.Unlock()
	sp.ended = true
}

// TestSpans: each Repo call is a span dynashard.repo.<Op> with the table,
// the base and the id, around the spans of the calls it makes (a large
// value's chunk.Put); All's span ends when the iteration does, with the
// items it yielded.
func TestSpans(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		tr := &tracer{}
		c := s.Client(func(o *dynamodb.Options) { o.TracerProvider = tr })
		l := newTable(t, s, 1)
		r := newRepo[Reply](t, c, l, large("body", newStore(t, s, c, l)))
		ctx := context.Background()
		if _, err := r.Put(ctx, "b", Reply{ID: "x", Author: "ann", Body: make([]byte, 5000)}); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, err := range r.All(ctx, "b") {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		byName := map[string]*recorded{}
		for _, sp := range tr.spans {
			if !sp.ended {
				t.Errorf("span %s not ended", sp.name)
			}
			byName[sp.name] = sp
		}
		put, cput, all := byName["dynashard.repo.Put"], byName["dynashard.chunk.Put"], byName["dynashard.repo.All"]
		if put == nil || cput == nil || all == nil {
			t.Fatalf("spans %v: want dynashard.repo.Put, dynashard.chunk.Put and dynashard.repo.All", slices.Collect(maps.Keys(byName)))
		}
		if cput.parent != put.name || put.parent != "" {
			t.Errorf("chunk.Put's parent %q, repo.Put's %q; want repo.Put and none", cput.parent, put.parent)
		}
		for k, want := range map[any]any{observe.AttrTable: l.Table, observe.AttrBase: "b", "dynashard.id": "x"} {
			if got := put.props[k]; got != want {
				t.Errorf("repo.Put's %v = %v, want %v", k, got, want)
			}
		}
		if got := all.props[observe.AttrItems]; got != n || n != 1 {
			t.Errorf("repo.All's %s = %v, yielded %d, want 1", observe.AttrItems, got, n)
		}
	})
}

// askedFor records the ReturnConsumedCapacity of every request a client
// sends, by operation, from a middleware in its Initialize step.
type askedFor struct {
	mu  sync.Mutex
	ops map[string]map[types.ReturnConsumedCapacity]bool
}

func (a *askedFor) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("repoTestAsked",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				rc := types.ReturnConsumedCapacity("no such field")
				if f := reflect.ValueOf(in.Parameters).Elem().FieldByName("ReturnConsumedCapacity"); f.IsValid() {
					rc = types.ReturnConsumedCapacity(f.String())
				}
				op := awsmiddleware.GetOperationName(ctx)
				a.mu.Lock()
				if a.ops[op] == nil {
					a.ops[op] = map[types.ReturnConsumedCapacity]bool{}
				}
				a.ops[op][rc] = true
				a.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
}

func (a *askedFor) take() map[string]map[types.ReturnConsumedCapacity]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.ops
	a.ops = map[string]map[types.ReturnConsumedCapacity]bool{}
	return out
}

// TestUnobservedAsksNothing: with no Usage in the context and no provider
// on the client, no request of a Repo call (the layout record's, the
// item's, the Query's, a large value's) asks for consumed capacity; with a
// Usage every one asks for it per index.
func TestUnobservedAsksNothing(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		a := &askedFor{ops: map[string]map[types.ReturnConsumedCapacity]bool{}}
		c := s.Client(a.option)
		for _, tc := range []struct {
			name string
			ctx  context.Context
			want types.ReturnConsumedCapacity
		}{
			{"unobserved", context.Background(), ""},
			{"with a Usage", dynashard.WithUsage(context.Background(), &dynashard.Usage{}), types.ReturnConsumedCapacityIndexes},
		} {
			l := newTable(t, s, 2)
			r := newRepo[Reply](t, c, l, large("body", newStore(t, s, c, l, func(o *chunk.Options) { o.ChunkSize = 3000 })),
				func(o *repo.Options) { o.CacheEntries = 10 })
			a.take()
			ctx := tc.ctx
			for _, v := range []Reply{{ID: "x", Body: make([]byte, 7000)}, {ID: "x", Body: make([]byte, 5000)}} {
				if _, err := r.Put(ctx, "b", v); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.Get(ctx, "b", "x"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := r.List(ctx, "b", 10, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Count(ctx, "b"); err != nil {
				t.Fatal(err)
			}
			if err := r.Delete(ctx, "b", "x"); err != nil {
				t.Fatal(err)
			}
			want := map[string]map[types.ReturnConsumedCapacity]bool{}
			for _, op := range []string{"GetItem", "PutItem", "BatchWriteItem", "UpdateItem", "BatchGetItem", "Query", "DeleteItem"} {
				want[op] = map[types.ReturnConsumedCapacity]bool{tc.want: true}
			}
			if diff := cmp.Diff(want, a.take()); diff != "" {
				t.Errorf("%s: ReturnConsumedCapacity by operation (-want +got):\n%s", tc.name, diff)
			}
		}
	})
}
