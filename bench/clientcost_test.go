package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// TestClientCost runs scenario 10 at a tiny size against each test server
// and checks its tables' rows, not their figures.
func TestClientCost(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		code, out, errOut := runCLI(t, "-endpoint", s.Endpoint, "-scenarios", "10",
			"-cost-rounds", "2", "-cost-ops", "4", "-cost-mib", "1")
		if code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
		var got [][2]string
		for _, row := range sectionRows(t, out, "## 10. ") {
			got = append(got, [2]string{row["operation"], row["method"]})
			if row["CPU µs per unit"] == "" || row["allocs per unit"] == "" || row["÷ plain"] == "" {
				t.Errorf("row %v lacks a figure", row)
			}
		}
		want := [][2]string{
			{"Put, per call", "PutItem"}, {"Put, per call", "Table.Put"},
			{"Get, per call", "GetItem"}, {"Get, per call", "Table.Get"},
			{"Get, consistent, per call", "GetItem"}, {"Get, consistent, per call", "Table.Get"},
			{"Update, per call", "UpdateItem"}, {"Update, per call", "Table.Update"},
			{"Delete, per call", "DeleteItem"}, {"Delete, per call", "Table.Delete"},
			{"Load, per item", "BatchWriteItem loop"}, {"Load, per item", "Table.Load"},
			{"scatter read, per item", "Query loop + sort"}, {"scatter read, per item", "scatter.All"},
			{"scatter read, per item", "scatter.All, PageSize 1000"},
			{"chunk write, per MiB", "BatchWriteItem loop"}, {"chunk write, per MiB", "chunk.Store.Put"},
			{"chunk read, per MiB", "BatchGetItem loop"}, {"chunk read, per MiB", "chunk.Store.Get"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("rows (-want +got):\n%s", diff)
		}
		// The requests each method sent, counted by the client: a
		// cached Get is one GetItem, a consistent one reads the record too.
		for _, w := range []string{
			"| Put, per call | Table.Put | 1 PutItem |", "| Get, per call | Table.Get | 1 GetItem |",
			"| Get, consistent, per call | Table.Get | 2 GetItem |", "| Delete, per call | DeleteItem | 1 DeleteItem |",
			"Against the target of at most 1.1×",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	})
}

// TestClassify checks the profile's buckets on made-up stacks: the
// innermost frame outside the standard library decides, and a stack
// without one is left out.
func TestClassify(t *testing.T) {
	fn := map[string]*profile.Function{}
	stack := func(names ...string) *profile.Sample { // innermost first
		s := &profile.Sample{Value: []int64{10}, Label: map[string][]string{costLabel: {"Put/Table.Put"}}}
		for _, n := range names {
			if fn[n] == nil {
				fn[n] = &profile.Function{Name: n}
			}
			s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: fn[n]}}})
		}
		return s
	}
	const (
		put    = "github.com/aws/aws-sdk-go-v2/service/dynamodb.(*Client).PutItem"
		write  = "github.com/dynashard/dynashard/shard.(*Table[go.shape.struct { PK string }]).write"
		mw     = "github.com/dynashard/dynashard/internal/attempts.(*Counter).Option.func1.1"
		signer = "github.com/aws/aws-sdk-go-v2/aws/signer/v4.(*Signer).SignHTTP"
		av     = "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue.(*Encoder).Encode"
		bench  = "main.(*bencher).costOps.func3"
	)
	tests := []struct {
		s    *profile.Sample
		want int
		name string
	}{
		{stack("runtime.mallocgc", "context.WithDeadline", write, bench), bucketLib, "shard.(*Table[...]).write"},
		{stack("crypto/sha256.block", signer, mw, put, write), bucketSDK, ""},
		{stack("runtime.mallocgc", mw, "github.com/aws/smithy-go/middleware.decoratedFinalizeHandler.HandleFinalize", put), bucketLib,
			"internal/attempts.(*Counter).Option.func1.1"},
		{stack("reflect.Value.Field", av, "github.com/dynashard/dynashard/internal/avmap.Marshal", write), bucketAV, ""},
		{stack("runtime.memmove", bench, "runtime.main"), bucketBench, ""},
		{stack("github.com/dynashard/dynashard/bench.(*replayClient).Do", put), bucketBench, ""},
		{stack("internal/poll.(*FD).Write", "net/http.(*persistConn).writeLoop", "runtime.goexit"), -1, ""},
		{stack("golang.org/x/sync/errgroup.(*Group).Go.func1"), bucketOther, ""},
	}
	for _, tt := range tests {
		b, name := classify(tt.s)
		if b != tt.want || name != tt.name {
			t.Errorf("%s: got %d %q, want %d %q", tt.s.Location[0].Line[0].Function.Name, b, name, tt.want, tt.name)
		}
	}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}}
	for _, tt := range tests {
		p.Sample = append(p.Sample, tt.s)
	}
	sh := attributeProfile(p)["Put/Table.Put"]
	if sh == nil || sh.samples != len(tests)-1 || sh.total != 10*float64(len(tests)-1) || sh.frames["shard.(*Table[...]).write"] != 10 {
		t.Errorf("attributeProfile: %+v, want %d samples of 10 and write's one", sh, len(tests)-1)
	}
}

func TestFuncPackage(t *testing.T) {
	for name, want := range map[string]string{
		"net/http.(*Transport).roundTrip":  "net/http",
		"runtime.mallocgc":                 "runtime",
		"main.(*bencher).clientCost.func2": "main",
		"github.com/dynashard/dynashard/internal/observe.Do[go.shape.struct { Key map[string]github.com/x/y.V }]": "github.com/dynashard/dynashard/internal/observe",
		"github.com/aws/smithy-go/middleware.(*Stack).HandleMiddleware":                                           "github.com/aws/smithy-go/middleware",
	} {
		if got := funcPackage(name); got != want {
			t.Errorf("funcPackage(%q) = %q, want %q", name, got, want)
		}
	}
}

// BenchmarkClientCost times scenario 10's calls (Put, Get, Update, Delete),
// a window of each (25 calls, or a Load and a scatter read of 125 items),
// of the library and of the plain SDK code with DynamoDB Local's answers
// replayed from memory: no network, no server, nothing but the client's
// CPU (library, SDK, attributevalue), so a profile of it shows the
// library's share without the kernel's and the transport's noise.
// Run it as
//
//	go test -run '^$' -bench ClientCost -cpuprofile cpu.out
//
// Each call is first sent to the server once and its answer kept; every
// later request with the same operation and the same bytes in its body
// (in any order: the SDK writes a map's keys in random order) gets that
// answer. The replay's own work is in both methods' figures alike.
// cpu-ns/op is the process's CPU time (getrusage) per call, every thread
// counted: on a shared machine, a fairer figure than ns/op.
func BenchmarkClientCost(b *testing.B) {
	s := ddbtest.Get(b, localddb.DynamoDBLocal)
	ctx := context.Background()
	bn := &bencher{cfg: benchConfig{costOps: costCallsPerWindow, costMiB: 1, attempts: 3}, prog: newProgress(io.Discard), cpu: &cpuMeter{}}
	rp := &replayClient{answers: map[string]*replayed{}}
	cl := bn.client(s.Endpoint, 16, func(o *dynamodb.Options) {
		rp.next = o.HTTPClient
		o.HTTPClient = rp
	})
	var tables []string
	for _, keys := range [][]string{{"pk:S", "sk:S"}, {"pk:S"}, {"ChunkKey:S"}} {
		name, drop, err := bn.newTable(ctx, cl, keys...)
		if err != nil {
			b.Fatal(err)
		}
		defer drop()
		tables = append(tables, name)
	}
	ops, err := bn.costOps(ctx, cl, tables[0], tables[1], tables[2])
	if err != nil {
		b.Fatal(err)
	}
	// The chunks' figures are the SDK's and SHA-256's: no replay needed.
	ops = slices.DeleteFunc(ops, func(op costOp) bool { return op.unit == "MiB" })
	// Twice, in order (what Get reads, Put wrote): the second time the
	// answers kept are those of a base whose layout record exists.
	for range 2 {
		for _, op := range ops {
			for _, m := range op.methods {
				if err := m.run(ctx, 0, 0); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	rp.mu.Lock()
	rp.replay = true
	rp.mu.Unlock()
	for _, op := range ops {
		units := op.units / float64(op.parts) // a window's
		for _, m := range op.methods {
			b.Run(strings.ReplaceAll(op.name, ", ", "_")+"/"+m.name, func(b *testing.B) {
				var ru syscall.Rusage
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				c0 := processCPU(&ru)
				// Labelled as the scenario's windows are, so that
				// attributeProfile reads a -cpuprofile of it.
				pprof.Do(ctx, pprof.Labels(costLabel, op.name+"/"+m.name), func(ctx context.Context) {
					for b.Loop() {
						if err := m.run(ctx, 0, 0); err != nil {
							b.Fatal(err)
						}
					}
				})
				c1 := processCPU(&ru)
				runtime.ReadMemStats(&m1)
				n := float64(b.N) * units
				b.ReportMetric(float64(c1-c0)/n, "cpu-ns/"+op.unit)
				b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/"+op.unit)
			})
		}
	}
	if rp.misses > 0 {
		b.Errorf("%d requests not replayed", rp.misses)
	}
}

// replayClient is an HTTP client that sends each request to next until
// replay is set, keeping the answers, and then answers from them.
type replayClient struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
	mu      sync.Mutex
	replay  bool
	answers map[string]*replayed
	misses  int
}

type replayed struct {
	status int
	header http.Header
	body   []byte
}

func (c *replayClient) Do(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body.Close()
	key, err := replayKey(r.Header.Get("X-Amz-Target"), body)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	a, ok := c.answers[key]
	replay := c.replay
	if replay && !ok && !bytes.Contains(body, []byte(`#dynashard"`)) {
		c.misses++
	}
	c.mu.Unlock()
	if !replay || !ok {
		r.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := c.next.Do(r)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		a = &replayed{resp.StatusCode, resp.Header.Clone(), b}
		// A base's layout record ("base#dynashard") is written after a
		// read finds none: an answer without it is not kept.
		if !bytes.Contains(body, []byte(`#dynashard"`)) || bytes.Contains(b, []byte(`"Item"`)) {
			c.mu.Lock()
			c.answers[key] = a
			c.mu.Unlock()
		}
	}
	return &http.Response{StatusCode: a.status, Header: a.header.Clone(), Body: io.NopCloser(bytes.NewReader(a.body)),
		ContentLength: int64(len(a.body)), Request: r}, nil
}

// replayKey is what identifies a request to replayClient: its operation
// and its body's bytes counted, not their order (cheap, and enough to
// tell one call's requests from another's). A Query's body is compared as
// JSON: two start keys may hold the same bytes. Load groups items into
// BatchWriteItem requests as it goes, and every answer is the same
// (nothing unprocessed): those match on the operation alone.
func replayKey(target string, body []byte) (string, error) {
	switch {
	case strings.HasSuffix(target, ".BatchWriteItem"):
		return target, nil
	case strings.HasSuffix(target, ".Query"):
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return "", err
		}
		b, err := json.Marshal(v) // map keys sorted
		return target + string(b), err
	}
	var counts [256]uint32
	for _, x := range body {
		counts[x]++
	}
	return target + string(unsafe.Slice((*byte)(unsafe.Pointer(&counts)), len(counts)*4)), nil
}
