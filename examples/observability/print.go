package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// printSpans prints dynashard's spans as a tree, each with its dynashard.*
// attributes and the count of SDK operation spans below it (the SDK's
// inner spans, such as its retry loop's, are left out).
func printSpans(w io.Writer, spans tracetest.SpanStubs) {
	kids := map[trace.SpanID]tracetest.SpanStubs{}
	for _, s := range spans {
		kids[s.Parent.SpanID()] = append(kids[s.Parent.SpanID()], s)
	}
	var walk func(s tracetest.SpanStub, indent string)
	walk = func(s tracetest.SpanStub, indent string) {
		fmt.Fprintf(w, "%s%s %v", indent, s.Name, s.EndTime.Sub(s.StartTime).Round(time.Millisecond))
		for _, kv := range s.Attributes {
			if k, ok := strings.CutPrefix(string(kv.Key), "dynashard."); ok {
				fmt.Fprintf(w, " %s=%s", k, kv.Value.String())
			}
		}
		fmt.Fprintln(w)
		var sdk []string // in order of first appearance
		count := map[string]int{}
		for _, k := range kids[s.SpanContext.SpanID()] {
			if strings.HasPrefix(k.Name, "dynashard.") {
				walk(k, indent+"  ")
			} else if count[k.Name]++; count[k.Name] == 1 {
				sdk = append(sdk, k.Name)
			}
		}
		for _, name := range sdk {
			fmt.Fprintf(w, "%s  %s ×%d\n", indent, name, count[name])
		}
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "dynashard.") && !s.Parent.IsValid() {
			walk(s, "  ")
		}
	}
}

// printMetrics prints dynashard's metrics, one line per data point.
func printMetrics(w io.Writer, rm metricdata.ResourceMetrics) {
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/dynashard/dynashard" {
			continue // the SDK's own client.call.* metrics
		}
		for _, m := range sm.Metrics {
			line := func(attrs attribute.Set, v any) {
				fmt.Fprintf(w, "  %s{%s} %v\n", m.Name, attrs.Encoded(attribute.DefaultEncoder()), v)
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					line(p.Attributes, p.Value)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					line(p.Attributes, p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					line(p.Attributes, p.Value)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					line(p.Attributes, fmt.Sprintf("count %d sum %d", p.Count, p.Sum))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					line(p.Attributes, fmt.Sprintf("count %d sum %.3g", p.Count, p.Sum))
				}
			}
		}
	}
}
