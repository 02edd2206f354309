package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
)

// TestSplitProfile divides a window's CPU by the samples of a profile
// made by hand: labelled, in the runtime's background work, and the rest.
func TestSplitProfile(t *testing.T) {
	fn := func(name string) *profile.Location {
		return &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: name}}}}
	}
	work, gc, serve := fn("main.work"), fn("runtime.gcBgMarkWorker"), fn("net/http.(*conn).serve")
	proxy := map[string][]string{proxyLabel: {proxyLabelValue}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Value: []int64{3, 30}, Location: []*profile.Location{work}},
			{Value: []int64{4, 40}, Location: []*profile.Location{serve}, Label: proxy},
			// A GC assist runs on the goroutine that allocated: its side's.
			{Value: []int64{1, 10}, Location: []*profile.Location{fn("runtime.gcAssistAlloc"), serve}, Label: proxy},
			{Value: []int64{2, 20}, Location: []*profile.Location{fn("runtime.scanobject"), gc}},
			{Value: []int64{1, 0}, Location: []*profile.Location{work}, Label: map[string][]string{"other": {"x"}}},
		},
	}
	got, err := splitProfile(p, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := cpuSplit{known: true, client: 300 * time.Millisecond, proxy: 500 * time.Millisecond, runtime: 200 * time.Millisecond}
	if got != want {
		t.Errorf("splitProfile = %+v, want %+v", got, want)
	}
	if _, err := splitProfile(&profile.Profile{SampleType: []*profile.ValueType{{Type: "samples"}}}, time.Second); err == nil {
		t.Error("splitProfile of a profile without cpu values: no error")
	}
	empty := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu"}}}
	if got, _ := splitProfile(empty, time.Second); got != (cpuSplit{known: true, client: time.Second}) {
		t.Errorf("splitProfile of no samples = %+v, want all to the client", got)
	}
}

// TestProxyLabelled checks that the goroutines serving a proxy's requests
// carry the label the split counts, and the client's do not.
func TestProxyLabelled(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("{}"))
	}))
	defer target.Close()
	p, err := newProxy(target.URL, faultproxy.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(p.URL(), "application/x-amz-json-1.0", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	// Read to the end, or closing the body closes the connection.
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The connection stays open: its server goroutine (the proxy's) and
	// its client goroutines (ours) are alive now.
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	label := `"` + proxyLabel + `":"` + proxyLabelValue + `"`
	for _, tc := range []struct {
		frame    string
		labelled bool
	}{
		{"net/http.(*conn).serve", true},           // the proxy's connection handler
		{"net/http.(*Server).Serve", true},         // the proxy's listener
		{"net/http.(*persistConn).readLoop", true}, // both: the proxy's client to the target is labelled
	} {
		found := false
		for _, g := range strings.Split(b.String(), "\n\n") {
			if strings.Contains(g, tc.frame) && strings.Contains(g, label) {
				found = true
			}
		}
		if found != tc.labelled {
			t.Errorf("a goroutine in %s with label %s: %v, want %v", tc.frame, label, found, tc.labelled)
		}
	}
	unlabelledClient := false
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "net/http.(*persistConn).readLoop") && !strings.Contains(g, label) {
			unlabelledClient = true
		}
	}
	if !unlabelledClient {
		t.Error("no unlabelled client connection goroutine: the client's goroutines would count as the proxy's")
	}
}
