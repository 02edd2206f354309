package shard_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/metrics"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/observe/observetest"
	"github.com/dynashard/dynashard/shard"
)

// meter is a MeterProvider that records what dynashard's instruments
// record (the SDK's own go to the no-op meter).
type meter struct {
	nopMeter // for everything not overridden
	mu       sync.Mutex
	points   []point
}

type nopMeter = metrics.Meter

// point is one value recorded on an instrument, with its properties.
type point struct {
	name  string
	value float64
	props map[any]any
}

func newMeter() *meter { return &meter{nopMeter: metrics.NopMeterProvider{}.Meter("")} }

// provider is m as a MeterProvider.
type provider struct{ m *meter }

func (p provider) Meter(string, ...metrics.MeterOption) metrics.Meter { return p.m }

type instrument struct {
	m    *meter
	name string
}

func (i instrument) record(v float64, opts []metrics.RecordMetricOption) {
	var o metrics.RecordMetricOptions
	for _, f := range opts {
		f(&o)
	}
	i.m.mu.Lock()
	defer i.m.mu.Unlock()
	i.m.points = append(i.m.points, point{i.name, v, o.Properties.Values()})
}

func (i instrument) Add(_ context.Context, v int64, o ...metrics.RecordMetricOption) {
	i.record(float64(v), o)
}
func (i instrument) Sample(_ context.Context, v int64, o ...metrics.RecordMetricOption) {
	i.record(float64(v), o)
}
func (i instrument) Record(_ context.Context, v int64, o ...metrics.RecordMetricOption) {
	i.record(float64(v), o)
}

type floatInstrument struct{ instrument }

func (i floatInstrument) Add(_ context.Context, v float64, o ...metrics.RecordMetricOption) {
	i.record(v, o)
}
func (i floatInstrument) Record(_ context.Context, v float64, o ...metrics.RecordMetricOption) {
	i.record(v, o)
}

func (m *meter) Int64Counter(name string, _ ...metrics.InstrumentOption) (metrics.Int64Counter, error) {
	return instrument{m, name}, nil
}
func (m *meter) Int64Gauge(name string, _ ...metrics.InstrumentOption) (metrics.Int64Gauge, error) {
	return instrument{m, name}, nil
}
func (m *meter) Int64Histogram(name string, _ ...metrics.InstrumentOption) (metrics.Int64Histogram, error) {
	return instrument{m, name}, nil
}
func (m *meter) Float64Counter(name string, _ ...metrics.InstrumentOption) (metrics.Float64Counter, error) {
	return floatInstrument{instrument{m, name}}, nil
}
func (m *meter) Float64Histogram(name string, _ ...metrics.InstrumentOption) (metrics.Float64Histogram, error) {
	return floatInstrument{instrument{m, name}}, nil
}

// take returns the points recorded on the instrument name since the last
// take of it.
func (m *meter) take(name string) []point {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out, rest []point
	for _, p := range m.points {
		if p.name == name {
			out = append(out, p)
		} else {
			rest = append(rest, p)
		}
	}
	m.points = rest
	return out
}

// observed returns a client for s with both providers.
func observed(s *ddbtest.Server, rec *observetest.Tracer, m *meter, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return s.Client(append(optFns, func(o *dynamodb.Options) { o.TracerProvider, o.MeterProvider = rec, provider{m} })...)
}

// TestSpans: with a TracerProvider and a MeterProvider on the client,
// each entry point is one ended span named dynashard.shard.<Method>
// carrying the table, the base, the history it acted under and the
// request totals; Load's carries the items written and the keys paced,
// Rebalance's the items scanned and moved. Every read of a layout record
// is counted in dynashard.shard.record_reads, a Rebalance's moves in
// dynashard.shard.rebalance.moved, a Load's paced keys in
// dynashard.load.paced_keys.
func TestSpans(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		rec, m := &observetest.Tracer{Prefix: "dynashard."}, newMeter()
		name := s.Table(t, "pk:S", "sk:S")
		tbl := newOrders(t, observed(s, rec, m), name, shard.Hash(2))
		type want struct {
			op      string
			history []int
			props   map[any]any // besides table, base, history and the totals
		}
		check := func(w want) {
			t.Helper()
			got := rec.Take()
			if len(got) != 1 {
				t.Fatalf("%s: %d spans, want 1: %+v", w.op, len(got), got)
			}
			sp := got[0]
			if sp.Name != "dynashard.shard."+w.op || !sp.Ended || sp.Parent != "" {
				t.Errorf("span %q (parent %q, ended %v), want dynashard.shard.%s, a root, ended", sp.Name, sp.Parent, sp.Ended, w.op)
			}
			if sp.Properties[observe.AttrTable] != name {
				t.Errorf("%s: table %v, want %s", w.op, sp.Properties[observe.AttrTable], name)
			}
			if base, ok := sp.Properties[observe.AttrBase]; (w.op == "Load") == ok || ok && base != "b" {
				t.Errorf("%s: base %v (set %v), want b (Load: none)", w.op, base, ok)
			}
			if h, _ := sp.Properties[observe.AttrHistory].([]int); !slices.Equal(h, w.history) {
				t.Errorf("%s: history %v, want %v", w.op, sp.Properties[observe.AttrHistory], w.history)
			}
			// Shards may answer from the cache, with no request.
			if r, ok := sp.Properties["dynashard.requests"].(int64); !ok || r < 1 && w.op != "Shards" {
				t.Errorf("%s: %v requests, want at least 1", w.op, sp.Properties["dynashard.requests"])
			}
			for k, v := range w.props {
				if sp.Properties[k] != v {
					t.Errorf("%s: %s = %v, want %v", w.op, k, sp.Properties[k], v)
				}
			}
		}
		reads := func(want int) {
			t.Helper()
			got := m.take(observe.MetricRecordReads)
			if len(got) != want {
				t.Errorf("record reads: %d, want %d", len(got), want)
			}
			for _, p := range got {
				if p.value != 1 || p.props[observe.AttrTable] != name {
					t.Errorf("record read %+v, want 1 on table %s", p, name)
				}
			}
		}

		if err := tbl.Put(ctx, "b", Order{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		check(want{op: "Put", history: []int{2}, props: map[any]any{"dynashard.consumed_write_units": 2.0}}) // the record and the item
		reads(1)
		if _, err := tbl.Get(ctx, "b", "a", func(o *shard.Options) { o.ConsistentRead = true }); err != nil {
			t.Fatal(err)
		}
		check(want{op: "Get", history: []int{2}, props: map[any]any{"dynashard.requests": int64(2)}})
		reads(1) // a consistent Get reads the record again
		if _, err := tbl.Update(ctx, "b", "a", expression.Set(expression.Name("amount"), expression.Value(3))); err != nil {
			t.Fatal(err)
		}
		check(want{op: "Update", history: []int{2}})
		if _, err := tbl.Shards(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		check(want{op: "Shards", history: []int{2}})
		var in []pair
		for i := range 30 {
			in = append(in, pair{"b", Order{ID: fmt.Sprint("L", i)}})
		}
		if _, err := tbl.Load(ctx, seq2(in)); err != nil {
			t.Fatal(err)
		}
		check(want{op: "Load", props: map[any]any{observe.AttrItems: 30, "dynashard.load.paced_keys": 0}})
		if p := m.take(observe.MetricPacedKeys); len(p) != 1 || p[0].value != 0 {
			t.Errorf("paced keys %+v, want one sample of 0 (nothing was throttled)", p)
		}
		if err := tbl.Delete(ctx, "b", "a"); err != nil {
			t.Fatal(err)
		}
		check(want{op: "Delete", history: []int{2}})
		m.take(observe.MetricRecordReads) // the cache's (HistoryTTL 50 ms) rereads

		if !s.Transactions() {
			return
		}
		if _, err := tbl.Reshard(ctx, "b", 4); err != nil {
			t.Fatal(err)
		}
		check(want{op: "Reshard", history: []int{2, 4}, props: map[any]any{observe.AttrShardsTo: 4}})
		reads(2) // before announcing 4, and after activating it
		p, err := tbl.Rebalance(ctx, "b", func(o *shard.RebalanceOptions) { o.Wait = -1 })
		if err != nil {
			t.Fatal(err)
		}
		check(want{op: "Rebalance", history: []int{2, 4}, props: map[any]any{observe.AttrItems: p.Scanned, "dynashard.rebalance.moved": p.Moved}})
		reads(1)
		if moved := m.take(observe.MetricRebalanceMoved); p.Moved == 0 || len(moved) != 1 || moved[0].value != float64(p.Moved) {
			t.Errorf("moved metric %+v, want one point of %d (> 0)", moved, p.Moved)
		}
	})
}

// TestGrowObserved: a Grower's grow is a dynashard.shard.Grow span
// inside the Put that decided it, and every decision a point of
// dynashard.shard.grow_decisions naming the decision and the count.
func TestGrowObserved(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		rec, m := &observetest.Tracer{Prefix: "dynashard."}, newMeter()
		throttled, _ := throttledClient(t, s, faultproxy.Config{ThrottleRate: 0.4, Ops: []string{"PutItem"}, Seed: 7})
		c := observed(s, rec, m, func(o *dynamodb.Options) {
			o.BaseEndpoint, o.Retryer = throttled.Options().BaseEndpoint, throttled.Options().Retryer
		})
		clock := &fakeClock{now: time.Unix(0, 0)}
		var log decisionLog
		g := newGrower(t, clock, &log, func(o *shard.GrowOptions) { o.MaxN = 8 })
		name := s.Table(t, "pk:S", "sk:S")
		tbl, err := shard.NewTable[Order](c, layoutOf(name, shard.Hash(4)), func(o *shard.Options) { o.Grower = g })
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; len(log.kinds()) == 0 && i < 400; i++ {
			_ = tbl.Put(ctx, "hot", Order{ID: fmt.Sprint("o", i)}) // some fail, throttled
			clock.Advance(50 * time.Millisecond)                   // 20 Puts a window
		}
		if k := log.kinds(); !slices.Equal(k, []shard.DecisionKind{shard.Grow}) {
			t.Fatalf("decisions %v, want one grow", k)
		}
		points := m.take(observe.MetricGrow)
		if len(points) != 1 || points[0].value != 1 || points[0].props[observe.AttrDecision] != "grow" ||
			points[0].props[observe.AttrShardsTo] != 8 || points[0].props[observe.AttrTable] != name {
			t.Errorf("grow decisions %+v, want one grow to 8 on %s", points, name)
		}
		grows := rec.Named("dynashard.shard.Grow")
		if len(grows) != 1 || grows[0].Parent != "dynashard.shard.Put" || !grows[0].Ended ||
			grows[0].Properties[observe.AttrShardsTo] != 8 || grows[0].Properties[observe.AttrBase] != "hot" {
			t.Errorf("Grow spans %+v, want one, ended, inside a Put, base hot, to 8", grows)
		}
	})
}
