package repo_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/metrics"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/observe/observetest"
	"github.com/dynashard/dynashard/repo"
)

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
		l := cachedTable(t, s, 1)
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

// TestSpans: each Repo call is a span dynashard.repo.<Op> with the table,
// the base and the id, around the spans of the calls it makes (a large
// value's chunk.Put); All's span ends when the iteration does, with the
// items it yielded.
func TestSpans(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		tr := &observetest.Tracer{Prefix: "dynashard."}
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
		byName := map[string]*observetest.Span{}
		for _, sp := range tr.Spans() {
			if !sp.Ended {
				t.Errorf("span %s not ended", sp.Name)
			}
			byName[sp.Name] = &sp
		}
		put, cput, all := byName["dynashard.repo.Put"], byName["dynashard.chunk.Put"], byName["dynashard.repo.All"]
		if put == nil || cput == nil || all == nil {
			t.Fatalf("spans %v: want dynashard.repo.Put, dynashard.chunk.Put and dynashard.repo.All", slices.Collect(maps.Keys(byName)))
		}
		if cput.Parent != put.Name || put.Parent != "" {
			t.Errorf("chunk.Put's parent %q, repo.Put's %q; want repo.Put and none", cput.Parent, put.Parent)
		}
		for k, want := range map[any]any{observe.AttrTable: l.Table, observe.AttrBase: "b", "dynashard.id": "x"} {
			if got := put.Properties[k]; got != want {
				t.Errorf("repo.Put's %v = %v, want %v", k, got, want)
			}
		}
		if got := all.Properties[observe.AttrItems]; got != n || n != 1 {
			t.Errorf("repo.All's %s = %v, yielded %d, want 1", observe.AttrItems, got, n)
		}
	})
}

// TestUnobservedAsksNothing: with no Usage in the context and no provider
// on the client, no request of a Repo call (the layout record's, the
// item's, the Query's, a large value's) asks for consumed capacity; with a
// Usage every one asks for it per index.
func TestUnobservedAsksNothing(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		var a observetest.Asks
		c := s.Client(a.Option)
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
			a.Take()
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
			want := map[string][]types.ReturnConsumedCapacity{}
			for _, op := range []string{"GetItem", "PutItem", "BatchWriteItem", "UpdateItem", "BatchGetItem", "Query", "DeleteItem"} {
				want[op] = []types.ReturnConsumedCapacity{tc.want}
			}
			if diff := cmp.Diff(want, observetest.Distinct(a.Take())); diff != "" {
				t.Errorf("%s: ReturnConsumedCapacity by operation (-want +got):\n%s", tc.name, diff)
			}
		}
	})
}
