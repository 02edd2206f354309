//go:build unix

package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/examples/internal/svctest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// benchItem is an item of about 200 bytes (keys and attribute names
// included).
type benchItem struct {
	PK   string `dynamodbav:"pk"`
	ID   string `dynamodbav:"sk"`
	Body string `dynamodbav:"body"`
}

const (
	benchShards   = 32
	benchPerShard = 20
	benchPage     = 50 // items per Page: each shard's Query returns all its 20
	benchBase     = "day"
	benchPutBase  = "put"
)

// BenchmarkObserve measures what observability costs, on against off, in
// one run, against the first server DYNASHARD_SERVER selects (default
// DynamoDB Local), with no proxy. Two calls:
//
//   - page: scatter Page of 50 items over a base of 32 shards × 20 items
//     of about 200 bytes (32 Queries, each returning its shard's 20);
//   - put: shard Table.Put of one item of about 200 bytes (one PutItem;
//     the base's layout record is already written).
//
// Each in five settings, side by side:
//
//   - off: a plain client, no Usage in the context;
//   - usage: dynashard.WithUsage only (a new Usage per call, read once
//     after it); every request asks for ReturnConsumedCapacity INDEXES;
//   - otel-sdk-only: the client has an OpenTelemetry SDK TracerProvider
//     (every span sampled, exported synchronously to an in-memory
//     exporter) and MeterProvider (a ManualReader), adapted as main.go
//     does, but dynashard is given it behind a wrapper that hides its
//     Options method, so dynashard sees no provider: only the AWS SDK's
//     own per-request spans and client.call.* metrics are on;
//   - otel: the same client given to dynashard directly: the SDK's spans
//     and metrics plus dynashard's (a span per logical call, its
//     metrics, and ReturnConsumedCapacity on every request). otel minus
//     otel-sdk-only is dynashard's share;
//   - otel+usage: otel with a Usage too.
//
// Besides ns/op, B/op and allocs/op each reports cpu-ns/op: the user and
// system CPU time of this process (getrusage RUSAGE_SELF) per call. The
// server is another process, so it is not counted; on a small machine it
// competes with the client for the cores, so wall time mixes the two.
// spans/op counts the spans one call ended.
//
// go test runs each sub-benchmark -count times in a row, so the settings
// are measured one after another, and DynamoDB Local keeps getting
// faster for a while after it starts: every setting is warmed for 20 s
// first, and page/interleaved and put/interleaved make one call in each
// setting per iteration, in turn, reporting each setting's wall time and
// CPU time per call as <setting>-ns/op and <setting>-cpu-ns/op. Compare
// times there (the separate sub-benchmarks' ns/op and cpu-ns/op ratios
// moved by up to 0.3 between runs, the interleaved ones by about 0.1);
// B/op and allocs/op, which do not drift, in the separate sub-benchmarks.
//
// Figures: medians of -count 5 on a 2-core AMD EPYC, go1.26.8, DynamoDB
// Local 1.25.1, as ratios against off in the same run; time and CPU from
// interleaved, B/op and allocs/op from the separate sub-benchmarks.
//
//	page (off: 18.2 ms, 15.1 ms CPU, 1.47 MB, 17,741 allocs per call)
//	               time   CPU    B/op   allocs   spans
//	usage          1.01×  1.02×  1.01×    +140       -
//	otel-sdk-only  1.30×  1.66×  2.23×  +15,087    352
//	otel           1.34×  1.67×  2.29×  +16,002    353
//	otel+usage     1.30×  1.65×  2.29×  +16,015    353
//
//	put (off: 0.81 ms, 0.45 ms CPU, 31.7 KB, 384 allocs per call)
//	usage          1.11×  0.93×  1.04×     +19       -
//	otel-sdk-only  1.25×  1.39×  2.76×    +476      11
//	otel           1.42×  1.65×  3.01×    +567      12
//	otel+usage     1.49×  1.72×  3.04×    +576      12
//
// The time ratios held within about ±0.1 over three runs; a Put's CPU
// ratios moved by ±0.2 between rounds (a garbage collection lands in one
// setting's call). Nearly all of otel's cost is the AWS SDK's own: 11
// spans per request. dynashard's share (otel against otel-sdk-only) is
// one span and 915 allocations per Page (3%), 91 per Put (11%). usage
// adds 140 allocations to a Page of 32 requests and 19 to a Put, the
// Usage included; a Put's extra time under usage is the server's (the
// client's CPU does not grow), presumably DynamoDB Local computing the
// consumed capacity it is asked for.
//
//	cd examples && go test ./observability -run '^$' -bench BenchmarkObserve -benchmem -count 5
func BenchmarkObserve(b *testing.B) {
	servers, err := svctest.Selected()
	if err != nil {
		b.Fatal(err)
	}
	s := servers[0]
	srv := dynashardtest.Start(b, func(o *dynashardtest.Options) { o.Kind, o.Endpoint = s.Kind, s.Endpoint })
	// One transport for every setting, with idle connections for a
	// Page's 32 parallel Queries (the SDK's default keeps 10 per host).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	plain := srv.Client(func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: tr} })

	ctx := context.Background()
	layout := shard.Layout{Table: dynashardtest.TableName("observe-bench"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(benchShards)}
	in, err := layout.CreateTableInput()
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.CreateTable(ctx, in); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if _, err := plain.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(layout.Table)}); err != nil {
			b.Errorf("delete table: %v", err)
		}
	})
	puts := loadBase(b, plain, layout)

	settings := []*setting{
		{name: "off"},
		{name: "usage", usage: true},
		{name: "otel-sdk-only", otel: true, hide: true},
		{name: "otel", otel: true},
		{name: "otel+usage", otel: true, usage: true},
	}
	for _, st := range settings {
		st.open(b, plain, layout)
	}
	warm(b, settings, puts)
	// go test runs each sub-benchmark -count times in a row, so the
	// settings follow one another; interleaved makes the calls of every
	// setting in turn, which no drift of the server can favour.
	for _, call := range []string{"page", "put"} {
		for _, st := range settings {
			b.Run(call+"/"+st.name, func(b *testing.B) { st.run(b, call, puts) })
		}
		b.Run(call+"/interleaved", func(b *testing.B) { interleave(b, settings, call, puts) })
	}
}

// warmFor is how long warm calls every setting before the first
// measurement: DynamoDB Local, a JVM, served a Page about twice as fast
// after 20 s of them as after 5 s (page/off, 52 ms then 22 ms).
const warmFor = 20 * time.Second

// warm makes Pages and Puts in every setting in turn for warmFor.
func warm(b *testing.B, settings []*setting, puts []benchItem) {
	b.Helper()
	for i, end := 0, time.Now().Add(warmFor); time.Now().Before(end); i++ {
		st := settings[i%len(settings)]
		for _, call := range []string{"page", "put"} {
			if err := st.once(context.Background(), call, i, puts); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// interleave makes, per iteration, one call in each setting, starting
// with a different one each time, and reports each setting's mean wall
// time and process CPU time per call as <setting>-ns/op and
// <setting>-cpu-ns/op. B/op and allocs/op are the separate
// sub-benchmarks'. Work the runtime does in the background (a garbage
// collection's marking) is counted in the call it overlaps; the heap is
// small, so a collection mostly starts and ends in the call whose
// allocations started it.
func interleave(b *testing.B, settings []*setting, call string, puts []benchItem) {
	ctx := context.Background()
	took := make([]time.Duration, len(settings))
	cpu := make([]int64, len(settings))
	i := 0
	for b.Loop() {
		for k := range settings {
			j := (i + k) % len(settings)
			c, start := cpuTime(b), time.Now()
			if err := settings[j].once(ctx, call, i, puts); err != nil {
				b.Fatal(err)
			}
			took[j] += time.Since(start)
			cpu[j] += cpuTime(b) - c
		}
		i++
	}
	for j, st := range settings {
		b.ReportMetric(float64(took[j].Nanoseconds())/float64(b.N), st.name+"-ns/op")
		b.ReportMetric(float64(cpu[j])/float64(b.N), st.name+"-cpu-ns/op")
	}
}

// setting is one way of observing: what the client has and the context
// carries.
type setting struct {
	name        string
	usage, otel bool
	hide        bool // hide the client's providers from dynashard

	tbl    *shard.Table[benchItem]
	scat   *scatter.Scatter
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

// open makes the setting's client, Table and Scatter.
func (st *setting) open(b *testing.B, plain *dynamodb.Client, layout shard.Layout) {
	client := plain
	if st.otel {
		st.spans = tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(st.spans))
		st.reader = sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(st.reader))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
		client = dynamodb.New(plain.Options(), withOpenTelemetry(tp, mp))
	}
	var (
		tc shard.Client   = client
		sc scatter.Client = client
	)
	if st.hide {
		// Embedding the interfaces promotes their methods only:
		// dynashard finds no Options method, so no provider.
		tc, sc = struct{ shard.Client }{client}, struct{ scatter.Client }{client}
	}
	var err error
	if st.tbl, err = shard.NewTable[benchItem](tc, layout); err != nil {
		b.Fatal(err)
	}
	if st.scat, err = scatter.New(sc, layout); err != nil {
		b.Fatal(err)
	}
}

// do makes the i-th call.
func (st *setting) do(ctx context.Context, call string, i int, puts []benchItem) error {
	if call == "put" {
		return st.tbl.Put(ctx, benchPutBase, puts[i%len(puts)])
	}
	items, _, err := st.scat.Page(ctx, benchBase, benchPage, "")
	if err == nil && len(items) != benchPage {
		err = fmt.Errorf("page of %d items, want %d", len(items), benchPage)
	}
	return err
}

// once makes the i-th call as the setting does: with a new Usage in
// the context (read once after the call), and with the exporter emptied
// first, as one that ships spans would free them.
func (st *setting) once(ctx context.Context, call string, i int, puts []benchItem) error {
	var u *dynashard.Usage
	if st.usage {
		u = new(dynashard.Usage)
		ctx = dynashard.WithUsage(ctx, u)
	}
	if st.spans != nil {
		st.spans.Reset()
	}
	if err := st.do(ctx, call, i, puts); err != nil {
		return err
	}
	if u != nil && u.Total().Total() <= 0 {
		return fmt.Errorf("%s: the Usage saw no capacity", call)
	}
	return nil
}

// run measures call in the setting.
func (st *setting) run(b *testing.B, call string, puts []benchItem) {
	b.ReportAllocs()
	ctx := context.Background()
	i := 0
	cpu := cpuTime(b)
	for b.Loop() {
		if err := st.once(ctx, call, i, puts); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
	if st.spans == nil {
		return
	}
	b.ReportMetric(float64(checkSpans(b, st.spans.GetSpans(), call, !st.hide)), "spans/op")
	var rm metricdata.ResourceMetrics
	if err := st.reader.Collect(ctx, &rm); err != nil {
		b.Fatal(err)
	}
	if _, ok := dynashardMetric(rm, "dynashard.call.duration"); ok == st.hide {
		b.Fatalf("dynashard.call.duration recorded: %v, want %v", ok, !st.hide)
	}
}

// loadBase writes benchBase's 32 × 20 items with the plain client (ids
// chosen so that each shard gets exactly 20), writes the layout record
// of benchPutBase with one Put, and returns the items the put benchmarks
// write in turn.
func loadBase(b *testing.B, c *dynamodb.Client, l shard.Layout) []benchItem {
	b.Helper()
	tbl, err := shard.NewTable[benchItem](c, l)
	if err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("x", 160)
	perKey := map[string]int{}
	var items []benchItem
	for i := 0; len(items) < benchShards*benchPerShard; i++ {
		id := fmt.Sprintf("2026-11-26T%08d", i)
		k, err := tbl.Key(benchBase, id)
		if err != nil {
			b.Fatal(err)
		}
		if perKey[k] < benchPerShard {
			perKey[k]++
			items = append(items, benchItem{ID: id, Body: body})
		}
	}
	seq := func(yield func(string, benchItem) bool) {
		for _, it := range items {
			if !yield(benchBase, it) {
				return
			}
		}
	}
	if st, err := tbl.Load(context.Background(), seq); err != nil || st.Written != len(items) {
		b.Fatalf("load: %d written, %v; want %d", st.Written, err, len(items))
	}
	puts := make([]benchItem, 1024)
	for i := range puts {
		puts[i] = benchItem{ID: fmt.Sprintf("2026-11-27T%08d", i), Body: body}
	}
	if err := tbl.Put(context.Background(), benchPutBase, puts[0]); err != nil {
		b.Fatal(err)
	}
	return puts
}

// checkSpans checks the spans of one call: the SDK's request spans
// always, dynashard's call span exactly when dynashard sees the
// providers. It returns how many there are.
func checkSpans(b *testing.B, spans tracetest.SpanStubs, call string, dynashardOn bool) int {
	b.Helper()
	want := map[string]string{"page": "dynashard.scatter.Page", "put": "dynashard.shard.Put"}[call]
	req := map[string]string{"page": "DynamoDB.Query", "put": "DynamoDB.PutItem"}[call]
	var mine, sdk int
	for _, s := range spans {
		switch s.Name {
		case want:
			mine++
		case req:
			sdk++
		}
	}
	if sdk == 0 || (mine == 1) != dynashardOn || mine > 1 {
		b.Fatalf("last call's spans: %d %s, %d %s (dynashard observing: %v); spans: %v", mine, want, sdk, req, dynashardOn, names(spans))
	}
	return len(spans)
}

// cpuTime is this process's user and system CPU time so far, in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
