// Command observability shows dynashard's calls through OpenTelemetry. It
// sets an OpenTelemetry SDK TracerProvider and MeterProvider on the AWS SDK
// client through smithy-go's adapters, and hands that client to dynashard,
// which reads both providers from it: each logical call (a bulk Load, a
// scatter Page) becomes a span named dynashard.<package>.<Op> whose
// children are the SDK's spans of the requests it sent (DynamoDB.Query,
// DynamoDB.BatchWriteItem), and records dynashard's metrics
// (dynashard.call.duration, dynashard.consumed_capacity, …). A
// dynashard.Usage in the context reports one call's consumed capacity,
// with or without a provider.
//
//	cd examples && go run ./observability
//
// It loads a day of events (-items) sharded over -shards keys, reads the
// day's first page back with one scatter Page, and prints the spans
// (dynashard's, and the SDK's operation spans below them), the metrics read
// from a ManualReader and the Load's Usage. It creates a table of its own
// and deletes it when done; -endpoint, -aws and -server choose DynamoDB
// as in the other examples.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/metrics/smithyotelmetrics"
	"github.com/aws/smithy-go/tracing/smithyoteltracing"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/examples/internal/backend"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "observability:", err)
		os.Exit(1)
	}
}

// withOpenTelemetry is the whole wiring: an option for the SDK client, as
// in dynamodb.NewFromConfig(cfg, withOpenTelemetry(tp, mp)).
func withOpenTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.TracerProvider = smithyoteltracing.Adapt(tp)
		o.MeterProvider = smithyotelmetrics.Adapt(mp)
	}
}

// Event is one item of the day.
type Event struct {
	Day  string `dynamodbav:"pk"` // the physical key, set by dynashard
	ID   string `dynamodbav:"sk"`
	Kind string `dynamodbav:"kind"`
}

const day = "2026-11-26"

// Report is what a run observed, for its test.
type Report struct {
	Spans   tracetest.SpanStubs        // every span, in the order they ended
	Metrics metricdata.ResourceMetrics // collected after both calls
	Load    *dynashard.Usage           // what the Load's requests reported
	Page    []scatter.Item
}

// run runs the program; clientOpts (for its test) are applied to the
// client after the providers.
func run(ctx context.Context, args []string, out io.Writer, clientOpts ...func(*dynamodb.Options)) (_ *Report, err error) {
	fs := flag.NewFlagSet("observability", flag.ContinueOnError)
	fs.SetOutput(out)
	var bcfg backend.Config
	bcfg.RegisterFlags(fs)
	shards := fs.Int("shards", 8, "physical keys of the day")
	items := fs.Int("items", 200, "events to load")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}

	// The OpenTelemetry SDK: spans kept in memory as each ends, metrics
	// read on demand. A service would export both (OTLP) instead.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() {
		ctx := context.WithoutCancel(ctx)
		err = errors.Join(err, tp.Shutdown(ctx), mp.Shutdown(ctx))
	}()

	b, err := backend.Open(ctx, bcfg)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, b.Close()) }()
	// The backend's client, with the providers set (its endpoint,
	// credentials and retryer kept).
	client := dynamodb.New(b.Client.Options(), append([]func(*dynamodb.Options){withOpenTelemetry(tp, mp)}, clientOpts...)...)

	table := "dynashard-observability-" + strings.ToLower(rand.Text()[:8]) // a new table, deleted when done
	layout := shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(*shards)}
	in, err := layout.CreateTableInput()
	if err != nil {
		return nil, err
	}
	if err := b.EnsureTable(ctx, in); err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, b.DeleteTables(context.WithoutCancel(ctx), table)) }()
	tbl, err := shard.NewTable[Event](client, layout)
	if err != nil {
		return nil, err
	}
	sc, err := scatter.New(client, layout)
	if err != nil {
		return nil, err
	}

	r := &Report{Load: new(dynashard.Usage)}
	stats, err := tbl.Load(dynashard.WithUsage(ctx, r.Load), events(*items))
	if err != nil {
		return nil, err
	}
	if r.Page, _, err = sc.Page(ctx, day, 10, ""); err != nil {
		return nil, err
	}
	r.Spans = spans.GetSpans()
	if err := reader.Collect(ctx, &r.Metrics); err != nil {
		return nil, err
	}

	u := r.Load
	fmt.Fprintf(out, "Load: %d events in %d requests, %.0f WCU; %d throttled attempts, %d unprocessed entries\n",
		stats.Written, u.Requests(), u.Total().Write, u.Throttled(), u.Unprocessed())
	fmt.Fprintf(out, "Page: %d events\n\nSpans:\n", len(r.Page))
	printSpans(out, r.Spans)
	fmt.Fprintln(out, "\nMetrics:")
	printMetrics(out, r.Metrics)
	return r, nil
}

func events(n int) iter.Seq2[string, Event] {
	return func(yield func(string, Event) bool) {
		for i := range n {
			if !yield(day, Event{ID: fmt.Sprintf("e%05d", i), Kind: "click"}) {
				return
			}
		}
	}
}
