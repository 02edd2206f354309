package observe

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/metrics"
)

// Metric names, units and attribute keys. Names follow OpenTelemetry's
// conventions (dot-separated, lower case, units in UCUM), as the SDK's own
// client.call.* metrics do.
const (
	MetricCallDuration   = "dynashard.call.duration"       // s, histogram; attribute dynashard.operation, error.type
	MetricCallRequests   = "dynashard.call.requests"       // {request}, histogram: DynamoDB requests per logical call
	MetricCapacity       = "dynashard.consumed_capacity"   // {capacity_unit}, counter; aws.dynamodb.table_name, dynashard.capacity.kind
	MetricThrottled      = "dynashard.throttled_attempts"  // {attempt}, counter; aws.dynamodb.table_name
	MetricUnprocessed    = "dynashard.unprocessed_entries" // {entry}, counter; aws.dynamodb.table_name
	MetricConcurrency    = "dynashard.scatter.concurrency_limit"
	MetricGrow           = "dynashard.shard.grow_decisions"  // {decision}, counter; dynashard.decision, dynashard.shards.to
	MetricRecordReads    = "dynashard.shard.record_reads"    // {read}, counter
	MetricRebalanceMoved = "dynashard.shard.rebalance.moved" // {item}, counter
	MetricPacedKeys      = "dynashard.load.paced_keys"       // {key}, gauge
	MetricKeyRate        = "dynashard.load.key_rate"         // {capacity_unit}/s, histogram: learned rate of each paced key
	MetricCache          = "dynashard.cache.lookups"         // {lookup}, counter; dynashard.cache.result hit|miss
	MetricCacheEvictions = "dynashard.cache.evictions"       // {item}, counter

	// Span attributes a user filters on (besides AttrTable, and the
	// request totals End sets).
	AttrBase    = "dynashard.base"           // string: the logical key
	AttrHistory = "dynashard.shards.history" // []int: the base's shard counts, oldest first
	AttrQueried = "dynashard.shards.queried" // int: shards (suffixes) a read queried
	AttrItems   = "dynashard.items"          // int: items returned or written

	AttrOperation = "dynashard.operation"
	AttrTable     = "aws.dynamodb.table_name"
	AttrKind      = "dynashard.capacity.kind"
	AttrErrorType = "error.type"
	AttrDecision  = "dynashard.decision"
	AttrShardsTo  = "dynashard.shards.to"
	AttrResult    = "dynashard.cache.result"
)

type instruments struct {
	duration    metrics.Float64Histogram
	requests    metrics.Int64Histogram
	capacity    metrics.Float64Counter
	throttled   metrics.Int64Counter
	unprocessed metrics.Int64Counter
	concurrency metrics.Int64Gauge
	grow        metrics.Int64Counter
	recordReads metrics.Int64Counter
	moved       metrics.Int64Counter
	pacedKeys   metrics.Int64Gauge
	keyRate     metrics.Float64Histogram
	cache       metrics.Int64Counter
	evictions   metrics.Int64Counter
}

// newInstruments creates every instrument on m; one that m refuses is
// the no-op meter's (metrics are never worth failing a constructor for).
func newInstruments(m metrics.Meter) *instruments {
	nop := metrics.NopMeterProvider{}.Meter("")
	var i instruments
	i.duration = made(m.Float64Histogram, nop.Float64Histogram, MetricCallDuration, "s", "Duration of a dynashard logical call, all its DynamoDB requests included.")
	i.requests = made(m.Int64Histogram, nop.Int64Histogram, MetricCallRequests, "{request}", "DynamoDB requests sent by one logical call.")
	i.capacity = made(m.Float64Counter, nop.Float64Counter, MetricCapacity, "{capacity_unit}", "Capacity units DynamoDB reported consumed.")
	i.throttled = made(m.Int64Counter, nop.Int64Counter, MetricThrottled, "{attempt}", "Request attempts that met throttling.")
	i.unprocessed = made(m.Int64Counter, nop.Int64Counter, MetricUnprocessed, "{entry}", "Batch entries DynamoDB returned unprocessed.")
	i.concurrency = made(m.Int64Gauge, nop.Int64Gauge, MetricConcurrency, "{request}", "The adaptive limit on a scatter call's Queries in flight.")
	i.grow = made(m.Int64Counter, nop.Int64Counter, MetricGrow, "{decision}", "Decisions of a shard.Grower.")
	i.recordReads = made(m.Int64Counter, nop.Int64Counter, MetricRecordReads, "{read}", "Reads of a base's layout record.")
	i.moved = made(m.Int64Counter, nop.Int64Counter, MetricRebalanceMoved, "{item}", "Items a Rebalance moved to the newest count's keys.")
	i.pacedKeys = made(m.Int64Gauge, nop.Int64Gauge, MetricPacedKeys, "{key}", "Keys a bulk load paces at a learned rate.")
	i.keyRate = made(m.Float64Histogram, nop.Float64Histogram, MetricKeyRate, "{capacity_unit}/s", "The write rate (capacity units per second) a bulk load learned for a paced key.")
	i.cache = made(m.Int64Counter, nop.Int64Counter, MetricCache, "{lookup}", "Cache lookups, by result.")
	i.evictions = made(m.Int64Counter, nop.Int64Counter, MetricCacheEvictions, "{item}", "Items evicted from a cache.")
	return &i
}

type newFunc[T any] func(string, ...metrics.InstrumentOption) (T, error)

func made[T comparable](create, fallback newFunc[T], name, unit, desc string) T {
	var zero T
	v, err := create(name, func(o *metrics.InstrumentOptions) { o.UnitLabel, o.Description = unit, desc })
	if err != nil || v == zero {
		v, _ = fallback(name)
	}
	return v
}

func props(kv ...any) metrics.RecordMetricOption {
	return func(o *metrics.RecordMetricOptions) {
		for i := 0; i+1 < len(kv); i += 2 {
			o.Properties.Set(kv[i], kv[i+1])
		}
	}
}

// request records one request's sample.
func (s *Scope) request(ctx context.Context, smp *sample) {
	if s == nil || s.m == nil {
		return
	}
	for _, cc := range smp.capacity {
		c := units(cc.CapacityUnits, cc.ReadCapacityUnits, cc.WriteCapacityUnits, smp.read)
		t := aws.ToString(cc.TableName)
		if c.Read > 0 {
			s.m.capacity.Add(ctx, c.Read, props(AttrTable, t, AttrKind, "read"))
		}
		if c.Write > 0 {
			s.m.capacity.Add(ctx, c.Write, props(AttrTable, t, AttrKind, "write"))
		}
	}
	if smp.throttled > 0 {
		s.m.throttled.Add(ctx, smp.throttled, props(AttrTable, smp.table))
	}
	if smp.unproc > 0 {
		s.m.unprocessed.Add(ctx, smp.unproc, props(AttrTable, smp.table))
	}
}

// call records a logical call's duration and request count.
func (s *Scope) call(ctx context.Context, st *state, err error) {
	if s == nil || s.m == nil {
		return
	}
	kv := []any{AttrOperation, st.op}
	if failed(err) {
		kv = append(kv, AttrErrorType, errType(err))
	}
	s.m.duration.Record(ctx, time.Since(st.start).Seconds(), props(kv...))
	s.m.requests.Record(ctx, st.requests.Load(), props(AttrOperation, st.op))
}

// ConcurrencyLimit records a scatter call's adaptive limit.
func (s *Scope) ConcurrencyLimit(ctx context.Context, table string, limit int) {
	if s != nil && s.m != nil {
		s.m.concurrency.Sample(ctx, int64(limit), props(AttrTable, table))
	}
}

// Grow records a Grower decision (kind: grow, hold, failed, …) toward n.
func (s *Scope) Grow(ctx context.Context, table, kind string, n int) {
	if s != nil && s.m != nil {
		s.m.grow.Add(ctx, 1, props(AttrTable, table, AttrDecision, kind, AttrShardsTo, n))
	}
}

// RecordRead records a read of a layout record.
func (s *Scope) RecordRead(ctx context.Context, table string) {
	if s != nil && s.m != nil {
		s.m.recordReads.Add(ctx, 1, props(AttrTable, table))
	}
}

// Moved records items a Rebalance moved.
func (s *Scope) Moved(ctx context.Context, table string, n int) {
	if s != nil && s.m != nil && n > 0 {
		s.m.moved.Add(ctx, int64(n), props(AttrTable, table))
	}
}

// Paced records the keys a load paces and their learned rates.
func (s *Scope) Paced(ctx context.Context, rates []float64) {
	if s == nil || s.m == nil {
		return
	}
	s.m.pacedKeys.Sample(ctx, int64(len(rates)))
	for _, r := range rates {
		s.m.keyRate.Record(ctx, r)
	}
}

// Cache records a cache lookup and the evictions it caused.
func (s *Scope) Cache(ctx context.Context, hit bool, evicted int) {
	if s == nil || s.m == nil {
		return
	}
	result := "miss"
	if hit {
		result = "hit"
	}
	s.m.cache.Add(ctx, 1, props(AttrResult, result))
	if evicted > 0 {
		s.m.evictions.Add(ctx, int64(evicted))
	}
}

// ScopeOf returns the Scope of the call ctx belongs to (nil if none): for
// code that has no client of its own to ask.
func ScopeOf(ctx context.Context) *Scope {
	if st := from(ctx); st != nil {
		return st.scope
	}
	return nil
}
