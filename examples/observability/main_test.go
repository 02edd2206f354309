package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/examples/internal/svctest"
)

func TestMain(m *testing.M) { svctest.Main(m) }

// TestObservability runs the program against each selected server behind
// a fault proxy that throttles and leaves unprocessed some BatchWriteItem
// requests (and nothing else), and checks what OpenTelemetry received: the
// Page's span tree, the Load's metrics against what the proxy injected,
// and the Load's Usage.
func TestObservability(t *testing.T) {
	servers, err := svctest.Selected()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		t.Run(s.Name(), func(t *testing.T) {
			srv := dynashardtest.Start(t, func(o *dynashardtest.Options) {
				o.Kind, o.Endpoint = s.Kind, s.Endpoint
				o.Proxy = &faultproxy.Config{
					Ops:          []string{"BatchWriteItem"},
					ThrottleRate: 0.4, UnprocessedRate: 0.3, Seed: 1,
				}
			})
			const shards, items = 8, 100
			var out bytes.Buffer
			r, err := run(context.Background(), []string{
				"-endpoint", srv.Endpoint(), "-shards", fmt.Sprint(shards), "-items", fmt.Sprint(items),
			}, &out, fastRetries)
			if err != nil {
				t.Fatalf("run: %v\noutput:\n%s", err, out.String())
			}
			t.Logf("output:\n%s", out.String())
			injected := srv.Proxy().Stats().Total

			// The Page's span has one DynamoDB.Query child per shard (each
			// shard's Query asks for one item more than the page of 10
			// needs, and the merge takes at most 10 from one shard, so no
			// shard needs a second Query), and no Query span is anywhere
			// else. The Load's BatchWriteItem spans are
			// all its children too.
			if got := checkChildren(t, r.Spans, "dynashard.scatter.Page", "DynamoDB.Query"); got != shards {
				t.Errorf("dynashard.scatter.Page span: %d DynamoDB.Query children, want %d", got, shards)
			}
			if got := checkChildren(t, r.Spans, "dynashard.shard.Load", "DynamoDB.BatchWriteItem"); got == 0 {
				t.Errorf("dynashard.shard.Load span: no DynamoDB.BatchWriteItem child")
			}

			// The Load met the proxy's faults, and the metrics count
			// exactly what the proxy injected: every throttled attempt
			// (the SDK's retries included) and every unprocessed entry.
			if injected.Throttled == 0 || injected.Unprocessed == 0 {
				t.Fatalf("proxy injected %d throttles and %d unprocessed entries: want some of each (change the Seed)",
					injected.Throttled, injected.Unprocessed)
			}
			if got, want := sumInt(r.Metrics, "dynashard.throttled_attempts"), int64(injected.Throttled); got != want {
				t.Errorf("dynashard.throttled_attempts: got %d, want %d (the proxy's throttles)", got, want)
			}
			if got, want := sumInt(r.Metrics, "dynashard.unprocessed_entries"), int64(injected.Unprocessed); got != want {
				t.Errorf("dynashard.unprocessed_entries: got %d, want %d (the proxy's unprocessed entries)", got, want)
			}
			if !hasDuration(r.Metrics, "shard.Load") {
				t.Errorf("dynashard.call.duration has no data point with dynashard.operation=shard.Load")
			}

			// The Usage saw the same faults, and the Load's writes: each
			// event is under 1 KB, so 1 write unit, and is written once
			// (the proxy refuses a throttled request and removes an
			// unprocessed entry before forwarding, so neither is
			// charged), plus 1 unit for the base's layout record, which
			// the first write to a base puts; and 1 read unit for the
			// strongly consistent GetItem that looked for that record
			// first (a missing item costs the minimum). Both servers
			// report these figures.
			u := r.Load
			if u.Requests() <= 0 || u.Total().Write <= 0 {
				t.Errorf("Load's Usage: %d requests, %v write units: want both > 0", u.Requests(), u.Total().Write)
			}
			if got, want := u.Total(), (dynashard.Capacity{Read: 1, Write: items + 1}); got != want {
				t.Errorf("Load's Usage: got %+v, want %+v", got, want)
			}
			if u.Throttled() != int64(injected.Throttled) || u.Unprocessed() != int64(injected.Unprocessed) {
				t.Errorf("Load's Usage: %d throttled, %d unprocessed; want %d and %d (the proxy's)",
					u.Throttled(), u.Unprocessed(), injected.Throttled, injected.Unprocessed)
			}
			if len(r.Page) != 10 {
				t.Errorf("page: got %d items, want 10", len(r.Page))
			}
			if !strings.Contains(out.String(), "dynashard.scatter.Page") {
				t.Errorf("output lacks the Page's span:\n%s", out.String())
			}
			// It deleted the table it made.
			tables, err := svctest.Client(t, srv).ListTables(context.Background(), &dynamodb.ListTablesInput{})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tables.TableNames {
				if strings.HasPrefix(name, "dynashard-observability-") {
					t.Errorf("table %s left behind", name)
				}
			}
		})
	}
}

// fastRetries keeps the SDK's retries of the injected throttling from
// sleeping for seconds (its backoff is random, up to 2 s, then 4 s, …):
// they still happen and are still counted.
func fastRetries(o *dynamodb.Options) {
	o.Retryer = retry.AddWithMaxBackoffDelay(o.Retryer, 20*time.Millisecond)
}

// checkChildren checks that the run has exactly one span named parent
// and that every span named child is its child (none a root, none under
// another span), and returns how many there are.
func checkChildren(t *testing.T, spans tracetest.SpanStubs, parent, child string) int {
	t.Helper()
	var parents, children tracetest.SpanStubs
	for _, s := range spans {
		switch s.Name {
		case parent:
			parents = append(parents, s)
		case child:
			children = append(children, s)
		}
	}
	if len(parents) != 1 {
		t.Errorf("got %d %s spans, want 1 (spans: %v)", len(parents), parent, names(spans))
		return 0
	}
	id := parents[0].SpanContext.SpanID()
	n := 0
	for _, c := range children {
		switch {
		case !c.Parent.IsValid():
			t.Errorf("%s span %s is a root, want a child of %s", child, c.SpanContext.SpanID(), parent)
		case c.Parent.SpanID() != id:
			t.Errorf("%s span %s: parent %s (%s), want %s's %s",
				child, c.SpanContext.SpanID(), c.Parent.SpanID(), nameOf(spans, c.Parent.SpanID().String()), parent, id)
		default:
			n++
		}
	}
	return n
}

func names(spans tracetest.SpanStubs) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return n
}

func nameOf(spans tracetest.SpanStubs, id string) string {
	for _, s := range spans {
		if s.SpanContext.SpanID().String() == id {
			return s.Name
		}
	}
	return "no recorded span"
}

// dynashardMetric returns dynashard's metric called name, if it was recorded.
func dynashardMetric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/dynashard/dynashard" {
			continue
		}
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// sumInt sums an int64 counter's data points (0 if it was never added to).
func sumInt(rm metricdata.ResourceMetrics, name string) int64 {
	m, _ := dynashardMetric(rm, name)
	sum, _ := m.Data.(metricdata.Sum[int64])
	var n int64
	for _, p := range sum.DataPoints {
		n += p.Value
	}
	return n
}

// hasDuration reports whether dynashard.call.duration has a data point
// for the operation op.
func hasDuration(rm metricdata.ResourceMetrics, op string) bool {
	m, _ := dynashardMetric(rm, "dynashard.call.duration")
	h, _ := m.Data.(metricdata.Histogram[float64])
	for _, p := range h.DataPoints {
		if v, ok := p.Attributes.Value(attribute.Key("dynashard.operation")); ok && v.AsString() == op && p.Count > 0 {
			return true
		}
	}
	return false
}
