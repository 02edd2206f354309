package batch

// End-to-end proofs through the real SDK against real servers (DynamoDB
// Local and dynalite), and through dynashardtest/faultproxy for what local
// servers never do (UnprocessedItems/Keys, throttling).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// long runs the package's long modes (make test-long): the full-size
// workloads of the tests that shrink theirs by default, with the same
// assertions.
var long = flag.Bool("batch.long", false, "run the long modes: 10,000 puts at 90% unprocessed, 900 paced writes, 16 MB requests")

// eachParallel is ddbtest.Each with the servers' runs in parallel. The
// package's longest tests wait on requests (and on the proxy's pace) more
// than they compute, so two servers at once take little longer than one.
func eachParallel(t *testing.T, fn func(t *testing.T, srv *ddbtest.Server)) {
	t.Helper()
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		t.Parallel()
		fn(t, srv)
	})
}

// sent is one HTTP attempt as it went on the wire.
type sent struct {
	op         string
	entries    int   // writes or keys in the request
	body       int64 // request body bytes
	tables     int   // tables in the request
	consistent int   // tables read with ConsistentRead
	capacity   bool  // asked for ReturnConsumedCapacity (observe.Do: an observed call)
}

// recorder is an SDK middleware that records the body of every attempt: it
// reads and rewinds the serialized request, it changes nothing.
type recorder struct {
	mu    sync.Mutex
	calls []sent
}

func (r *recorder) option(o *dynamodb.Options) {
	mw := middleware.FinalizeMiddlewareFunc("test/recorder", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		req, ok := in.Request.(*smithyhttp.Request)
		if !ok {
			return next.HandleFinalize(ctx, in)
		}
		c := sent{op: strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")}
		if c.op == "BatchWriteItem" || c.op == "BatchGetItem" {
			body, err := io.ReadAll(req.GetStream())
			if err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, err
			}
			if err := req.RewindStream(); err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, err
			}
			c.body = int64(len(body))
			var parsed struct {
				RequestItems           map[string]json.RawMessage
				ReturnConsumedCapacity string
			}
			if err := json.Unmarshal(body, &parsed); err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, err
			}
			c.capacity = parsed.ReturnConsumedCapacity != ""
			c.tables = len(parsed.RequestItems)
			for _, raw := range parsed.RequestItems {
				if c.op == "BatchWriteItem" {
					var wrs []json.RawMessage
					_ = json.Unmarshal(raw, &wrs)
					c.entries += len(wrs)
				} else {
					var ka struct {
						Keys           []json.RawMessage
						ConsistentRead bool
					}
					_ = json.Unmarshal(raw, &ka)
					c.entries += len(ka.Keys)
					if ka.ConsistentRead {
						c.consistent++
					}
				}
			}
			r.mu.Lock()
			r.calls = append(r.calls, c)
			r.mu.Unlock()
		}
		return next.HandleFinalize(ctx, in)
	})
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Finalize.Add(mw, middleware.After)
	})
}

func (r *recorder) of(op string) []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sent
	for _, c := range r.calls {
		if c.op == op {
			out = append(out, c)
		}
	}
	return out
}

// newClient returns a client for endpoint with the settings doc.go
// recommends, its own transport (so a test can close its connections), and
// a recorder.
func newClient(endpoint string, attempts int, retryFns ...func(*retry.StandardOptions)) (*dynamodb.Client, *http.Transport, *recorder) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	rec := &recorder{}
	c := localddb.NewClient(endpoint, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: tr}
		o.Retryer = retry.NewStandard(append([]func(*retry.StandardOptions){func(so *retry.StandardOptions) {
			dynashard.RetryForFanOut(so)
			so.MaxAttempts = attempts
		}}, retryFns...)...)
	}, rec.option)
	return c, tr, rec
}

func pkItem(pk string, extra ...any) item {
	it := item{"pk": s(pk)}
	for i := 0; i+1 < len(extra); i += 2 {
		it[extra[i].(string)] = extra[i+1].(av)
	}
	return it
}

// scan returns every item of table, read directly from the server.
func scan(t *testing.T, srv *ddbtest.Server, table string) map[string]item {
	t.Helper()
	c := srv.Client()
	out := map[string]item{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			if _, dup := out[pk]; dup {
				t.Fatalf("scan of %s returned %s twice", table, pk)
			}
			out[pk] = it
		}
	}
	return out
}

func newProxy(t *testing.T, srv *ddbtest.Server, cfg faultproxy.Config) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(srv.Endpoint, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

var cmpItems = cmp.Transformer("attrs", func(it item) map[string]string {
	out := map[string]string{}
	for k, v := range it {
		out[k] = fmt.Sprintf("%T%v", v, v)
	}
	return out
})

// TestServerSplit: 26 writes (13 per table) and 101 keys are split into
// requests within DynamoDB's limits, and everything lands or is read.
func TestServerSplit(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		var writeUse, readUse dynashard.Usage
		ctx := dynashard.WithUsage(context.Background(), &writeUse)
		ta, tb := srv.Table(t, "pk:S"), srv.Table(t, "pk:S")
		c, _, rec := newClient(srv.Endpoint, 3)
		opt := func(o *Options) { o.KeyAttributes = map[string][]string{ta: {"pk"}, tb: {"pk"}} }

		var writes []Write
		want := map[string]map[string]item{ta: {}, tb: {}}
		for i := range 26 {
			table := []string{ta, tb}[i%2]
			it := pkItem(fmt.Sprint("w", i), "n", n(fmt.Sprint(i)), "s", s(strings.Repeat("é", i)))
			writes = append(writes, Write{Table: table, Put: it})
			want[table][fmt.Sprint("w", i)] = it
		}
		st, err := WriteAll(ctx, c, writes, opt)
		if err != nil {
			t.Fatal(err)
		}
		calls := rec.of("BatchWriteItem")
		if len(calls) != (26+MaxWritesPerRequest-1)/MaxWritesPerRequest || st.Requests != len(calls) {
			t.Errorf("BatchWriteItem calls: got %d (stats %d), want %d", len(calls), st.Requests, (26+MaxWritesPerRequest-1)/MaxWritesPerRequest)
		}
		total := 0
		for _, call := range calls {
			if call.entries > MaxWritesPerRequest {
				t.Errorf("request of %d writes, limit %d", call.entries, MaxWritesPerRequest)
			}
			if !call.capacity {
				t.Errorf("request %+v: want ReturnConsumedCapacity (a Usage in ctx)", call)
			}
			total += call.entries
		}
		if total != 26 || st.Done != 26 || st.Attempts < st.Requests {
			t.Errorf("writes sent %d, stats %+v: want 26 sent and done, attempts >= requests", total, st)
		}
		for _, table := range []string{ta, tb} {
			if diff := cmp.Diff(want[table], scan(t, srv, table), cmpItems); diff != "" {
				t.Errorf("table contents (-want +got):\n%s", diff)
			}
		}

		// 101 keys over both tables: 26 that exist, 75 that do not.
		var keys []Key
		for i := range 101 {
			keys = append(keys, Key{Table: []string{ta, tb}[i%2], Key: item{"pk": s(fmt.Sprint("w", i))}})
		}
		ctx = dynashard.WithUsage(context.Background(), &readUse)
		items, gst, err := Get(ctx, c, keys, opt, func(o *Options) { o.ConsistentRead = true })
		if err != nil {
			t.Fatal(err)
		}
		gets := rec.of("BatchGetItem")
		if len(gets) != (101+MaxKeysPerRequest-1)/MaxKeysPerRequest || gst.Requests != len(gets) || gst.Done != 101 {
			t.Errorf("BatchGetItem calls: got %d, stats %+v, want %d requests, 101 done", len(gets), gst, (101+MaxKeysPerRequest-1)/MaxKeysPerRequest)
		}
		for _, call := range gets {
			if call.entries > MaxKeysPerRequest {
				t.Errorf("request of %d keys, limit %d", call.entries, MaxKeysPerRequest)
			}
			if call.consistent != call.tables || !call.capacity {
				t.Errorf("request %+v: want ConsistentRead on every table and ReturnConsumedCapacity (a Usage in ctx)", call)
			}
		}
		got := map[string]map[string]item{ta: {}, tb: {}}
		for _, it := range items {
			got[it.Table][it.Item["pk"].(*types.AttributeValueMemberS).Value] = it.Item
		}
		if diff := cmp.Diff(want, got, cmpItems); diff != "" {
			t.Errorf("items read (-want +got):\n%s", diff)
		}
		// The capacity the engine summed into Stats is the call's Usage now.
		if w, r := writeUse.Total(), readUse.Total(); w.Write <= 0 || r.Read <= 0 {
			t.Errorf("consumed capacity: writes %+v, reads %+v, want both > 0", w, r)
		}
		if got, want := writeUse.Requests(), int64(len(calls)); got != want {
			t.Errorf("write Usage.Requests: got %d, want %d", got, want)
		}
		if got, want := readUse.Requests(), int64(len(gets)); got != want {
			t.Errorf("read Usage.Requests: got %d, want %d", got, want)
		}
	})
}

// TestServerDeleteAndProjection: deletes, a projection with attribute
// names, and a composite key.
func TestServerDeleteAndProjection(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		table := srv.Table(t, "pk:S", "sk:N")
		c, _, _ := newClient(srv.Endpoint, 3)
		opt := func(o *Options) { o.KeyAttributes = map[string][]string{table: {"pk", "sk"}} }
		var writes []Write
		for i := range 40 {
			writes = append(writes, Write{Table: table, Put: item{"pk": s("p"), "sk": n(fmt.Sprint(i)), "name": s(fmt.Sprint("n", i)), "x": s("hidden")}})
		}
		if _, err := WriteAll(ctx, c, writes, opt); err != nil {
			t.Fatal(err)
		}
		writes = writes[:0]
		for i := 0; i < 40; i += 2 {
			writes = append(writes, Write{Table: table, Delete: item{"pk": s("p"), "sk": n(fmt.Sprintf("%d.0", i))}})
		}
		if _, err := WriteAll(ctx, c, writes, opt); err != nil {
			t.Fatal(err)
		}
		var keys []Key
		for i := range 40 {
			keys = append(keys, Key{Table: table, Key: item{"pk": s("p"), "sk": n(fmt.Sprint(i))}})
		}
		items, _, err := Get(ctx, c, keys, opt, func(o *Options) {
			o.Projections = map[string]Projection{table: {Expression: "#n, sk", Names: map[string]string{"#n": "name"}}}
		})
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, it := range items {
			if len(it.Item) != 2 {
				t.Errorf("projected item %v: want exactly name and sk", it.Item)
			}
			got = append(got, it.Item["name"].(*types.AttributeValueMemberS).Value)
		}
		for i := 1; i < 40; i += 2 {
			want = append(want, fmt.Sprint("n", i))
		}
		slices.Sort(got)
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("items left after deletes (-want +got):\n%s", diff)
		}
	})
}

// TestServerSplitsOver16MB: writes that are small by DynamoDB's count but
// large on the wire (control characters are escaped to six bytes) are split
// so that no request body exceeds the limit. By default the limit is
// lowered to 1 MB and the items to a tenth; -batch.long sends the 16 MB
// requests (20-30 s per server under -race).
func TestServerSplitsOver16MB(t *testing.T) {
	limit, padding := int64(1<<20), 40_000
	if *long {
		limit, padding = MaxRequestBytes, 400_000
	}
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		table := srv.Table(t, "pk:S")
		c, _, rec := newClient(srv.Endpoint, 3)
		pad := strings.Repeat("\x01", padding)
		var writes []Write
		wire := 0
		for i := range 7 {
			it := pkItem(fmt.Sprint("big", i), "pad", s(pad))
			writes = append(writes, Write{Table: table, Put: it})
			wire += ddbsize.WireSize(it)
		}
		if int64(wire) <= limit || len(writes) > MaxWritesPerRequest {
			t.Fatalf("test data: %d wire bytes in %d writes would fit one request", wire, len(writes))
		}
		if _, err := WriteAll(ctx, c, writes, func(o *Options) {
			o.KeyAttributes, o.maxRequestBytes = map[string][]string{table: {"pk"}}, limit
		}); err != nil {
			t.Fatal(err)
		}
		calls := rec.of("BatchWriteItem")
		var bodies int64
		for _, call := range calls {
			if call.body < int64(ddbsize.WireSize(writes[0].Put)) {
				t.Fatalf("recorded body of %d bytes: smaller than one item", call.body)
			}
			if call.body > limit || call.body > 16<<20 {
				t.Errorf("request body of %d bytes, limit %d", call.body, limit)
			}
			bodies += call.body
		}
		if minCalls := int((bodies + limit - 1) / limit); len(calls) < minCalls || len(calls) < 2 {
			t.Errorf("BatchWriteItem calls: got %d for %d body bytes", len(calls), bodies)
		}
		t.Logf("%d writes, %d wire bytes by WireSize, sent as %+v", len(writes), wire, calls)
		got := scan(t, srv, table)
		if len(got) != len(writes) {
			t.Fatalf("items stored: got %d, want %d", len(got), len(writes))
		}
		for pk, it := range got {
			if it["pad"].(*types.AttributeValueMemberS).Value != pad {
				t.Errorf("item %s: pad differs", pk)
			}
		}
	})
}

// proxyCase is the common setup of the proxy tests: a table, a proxy in
// front of the server, and a client for the proxy.
type proxyCase struct {
	srv    *ddbtest.Server
	table  string
	proxy  *faultproxy.Proxy
	client *dynamodb.Client
	tr     *http.Transport
	rec    *recorder
	opt    func(*Options)
}

func setupProxy(t *testing.T, srv *ddbtest.Server, cfg faultproxy.Config, attempts int) *proxyCase {
	pc := &proxyCase{srv: srv, table: srv.Table(t, "pk:S")}
	pc.proxy = newProxy(t, srv, cfg)
	pc.client, pc.tr, pc.rec = newClient(pc.proxy.URL(), attempts)
	t.Cleanup(pc.tr.CloseIdleConnections)
	pc.opt = func(o *Options) { o.KeyAttributes = map[string][]string{pc.table: {"pk"}} }
	return pc
}

func (pc *proxyCase) puts(n int) []Write {
	ws := make([]Write, n)
	for i := range ws {
		ws[i] = Write{Table: pc.table, Put: pkItem(fmt.Sprintf("item%05d", i), "i", n2(i))}
	}
	return ws
}

func n2(i int) av { return n(fmt.Sprint(i)) }

// forwarded returns how many times the proxy forwarded each key's writes.
func (pc *proxyCase) forwarded() map[string]int {
	out := map[string]int{}
	for k, c := range pc.proxy.Stats().Keys {
		if k.Table == pc.table && c.Forwarded > 0 {
			out[k.PK] = c.Forwarded
		}
	}
	return out
}

// TestProxyUnprocessed90: with 90% of write requests returned unprocessed,
// 1,000 puts (10,000 with -batch.long) end with every item stored, each
// forwarded exactly once. The work ends the call: StallTimeout is only a
// safety bound (a lone leftover may wait many slow rounds on a loaded
// machine).
func TestProxyUnprocessed90(t *testing.T) {
	total := 1_000
	if *long {
		total = 10_000
	}
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		pc := setupProxy(t, srv, faultproxy.Config{UnprocessedRate: 0.9, Ops: []string{"BatchWriteItem"}, Seed: 1}, 3)
		writes := pc.puts(total)
		st, err := WriteAll(context.Background(), pc.client, writes, pc.opt, func(o *Options) {
			// Short waits keep the test quick; 90% unprocessed leaves a
			// lone leftover stalled for many rounds in a row.
			o.BaseDelay, o.MaxDelay, o.StallTimeout = 2*time.Millisecond, 50*time.Millisecond, 10*time.Minute
			o.MaxConcurrency = 16
		})
		if err != nil {
			t.Fatal(err)
		}
		got := scan(t, srv, pc.table)
		fwd := pc.forwarded()
		for _, w := range writes {
			pk := w.Put["pk"].(*types.AttributeValueMemberS).Value
			if _, ok := got[pk]; !ok {
				t.Errorf("%s missing", pk)
			}
			if fwd[pk] != 1 {
				t.Errorf("%s forwarded %d times, want 1", pk, fwd[pk])
			}
		}
		if len(got) != total || st.Done != total {
			t.Errorf("stored %d, done %d, want %d", len(got), st.Done, total)
		}
		if unp := pc.proxy.Stats().Ops["BatchWriteItem"].Unprocessed; st.UnprocessedRounds == 0 || unp < total {
			t.Errorf("proxy returned %d unprocessed writes over %d rounds: the fault was not exercised", unp, st.UnprocessedRounds)
		}
		t.Logf("%d puts: %+v", total, st)
	})
}

// TestProxyRetryBudget: a budget too small to finish ends the call with an
// error listing exactly the writes that are not stored.
func TestProxyRetryBudget(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		pc := setupProxy(t, srv, faultproxy.Config{UnprocessedRate: 0.9, Ops: []string{"BatchWriteItem"}, Seed: 2}, 3)
		writes := pc.puts(500)
		st, err := WriteAll(context.Background(), pc.client, writes, pc.opt, noWait, func(o *Options) { o.RetryBudget = 20 })
		var ue *UnprocessedError
		if !errors.As(err, &ue) || !errors.Is(err, ErrRetryBudget) {
			t.Fatalf("got %v, want *UnprocessedError wrapping ErrRetryBudget", err)
		}
		if st.Retries != 20 {
			t.Errorf("Retries: got %d, want 20", st.Retries)
		}
		got := scan(t, srv, pc.table)
		fwd := pc.forwarded()
		listed := map[string]bool{}
		for _, w := range ue.Writes {
			listed[w.Put["pk"].(*types.AttributeValueMemberS).Value] = true
		}
		for _, w := range writes {
			pk := w.Put["pk"].(*types.AttributeValueMemberS).Value
			_, stored := got[pk]
			if stored == listed[pk] {
				t.Errorf("%s: stored %v, listed as not done %v; want exactly one", pk, stored, listed[pk])
			}
			if want := map[bool]int{true: 1, false: 0}[stored]; fwd[pk] != want {
				t.Errorf("%s forwarded %d times, want %d", pk, fwd[pk], want)
			}
		}
		if len(ue.Writes) == 0 || st.Done != len(got) || st.Done+len(ue.Writes) != len(writes) {
			t.Errorf("done %d, stored %d, listed %d of %d", st.Done, len(got), len(ue.Writes), len(writes))
		}
	})
}

// TestProxyCancelDuringBackoff: cancelling while every request is backing
// off returns at once, leaves no goroutine, and nothing is written after.
func TestProxyCancelDuringBackoff(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		table := srv.Table(t, "pk:S")
		ignore := goleak.IgnoreCurrent()
		proxy, err := faultproxy.New(srv.Endpoint, faultproxy.Config{UnprocessedRate: 0.9, Ops: []string{"BatchWriteItem"}, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		client, tr, _ := newClient(proxy.URL(), 3)
		pc := &proxyCase{table: table}
		writes := pc.puts(400)

		const conc = 4
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var cancelledAt atomic.Int64
		var once sync.Once
		_, err = WriteAll(ctx, client, writes, func(o *Options) {
			o.KeyAttributes = map[string][]string{table: {"pk"}}
			o.MaxConcurrency = conc
			// Every backoff lasts an hour: the call can only end early.
			o.BaseDelay, o.MaxDelay = time.Hour, time.Hour
			o.jitter = func(d time.Duration) time.Duration { return d }
			o.OnProgress = func(st Stats) {
				if st.UnprocessedRounds == conc { // every worker is now backing off
					once.Do(func() {
						time.AfterFunc(100*time.Millisecond, func() {
							cancelledAt.Store(time.Now().UnixNano())
							cancel()
						})
					})
				}
			}
		})
		returned := time.Now()
		var ue *UnprocessedError
		if !errors.As(err, &ue) || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want *UnprocessedError wrapping context.Canceled", err)
		}
		// The backoffs had an hour to run; returning within seconds of the
		// cancel shows they were cut short.
		if at := cancelledAt.Load(); at == 0 || returned.Sub(time.Unix(0, at)) > 30*time.Second {
			t.Errorf("returned %v after the cancel", returned.Sub(time.Unix(0, at)))
		}
		before := proxy.Stats().Ops["BatchWriteItem"]
		time.Sleep(200 * time.Millisecond)
		after := proxy.Stats().Ops["BatchWriteItem"]
		if after.Requests != before.Requests || after.Forwarded != before.Forwarded {
			t.Errorf("proxy saw %d requests after return, want none", after.Requests-before.Requests)
		}
		tr.CloseIdleConnections()
		proxy.Close()
		goleak.VerifyNone(t, ignore)

		got := scan(t, srv, table)
		listed := map[string]bool{}
		for _, w := range ue.Writes {
			listed[w.Put["pk"].(*types.AttributeValueMemberS).Value] = true
		}
		for _, w := range writes {
			pk := w.Put["pk"].(*types.AttributeValueMemberS).Value
			if _, stored := got[pk]; stored == listed[pk] {
				t.Errorf("%s: stored %v, listed as not done %v; want exactly one", pk, stored, listed[pk])
			}
		}
	})
}

// TestProxyThrottled: throttling errors that survive the SDK's retries are
// retried by the engine until every write lands.
func TestProxyThrottled(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		// One SDK attempt: every throttle reaches the engine.
		pc := setupProxy(t, srv, faultproxy.Config{ThrottleRate: 0.6, Ops: []string{"BatchWriteItem"}, Seed: 4}, 1)
		writes := pc.puts(300)
		st, err := WriteAll(context.Background(), pc.client, writes, pc.opt, func(o *Options) {
			o.BaseDelay, o.MaxDelay, o.StallTimeout = time.Millisecond, 20*time.Millisecond, time.Minute
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.Throttled == 0 || st.Attempts != st.Requests {
			t.Errorf("stats %+v: want throttled calls, one attempt per request", st)
		}
		if got := scan(t, srv, pc.table); len(got) != len(writes) {
			t.Errorf("stored %d, want %d", len(got), len(writes))
		}
		for pk, c := range pc.forwarded() {
			if c != 1 {
				t.Errorf("%s forwarded %d times, want 1", pk, c)
			}
		}
	})
}

// TestProxyGetUnprocessed: BatchGetItem leftovers (half the keys each time)
// are read in later requests; every key is read exactly once.
func TestProxyGetUnprocessed(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		pc := setupProxy(t, srv, faultproxy.Config{UnprocessedRate: 0.5, Ops: []string{"BatchGetItem"}, Seed: 5}, 3)
		writes := pc.puts(300)
		if _, err := WriteAll(context.Background(), pc.client, writes, pc.opt); err != nil {
			t.Fatal(err)
		}
		var keys []Key
		for _, w := range writes {
			keys = append(keys, Key{Table: pc.table, Key: item{"pk": w.Put["pk"]}})
		}
		keys = append(keys, Key{Table: pc.table, Key: item{"pk": s("absent")}})
		items, st, err := Get(context.Background(), pc.client, keys, pc.opt, noWait)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, it := range items {
			seen[it.Item["pk"].(*types.AttributeValueMemberS).Value]++
		}
		for _, w := range writes {
			if pk := w.Put["pk"].(*types.AttributeValueMemberS).Value; seen[pk] != 1 {
				t.Errorf("%s read %d times, want 1", pk, seen[pk])
			}
		}
		if len(items) != len(writes) || st.Done != len(keys) || st.Retries == 0 {
			t.Errorf("read %d items, stats %+v; want %d items, %d done, retries", len(items), st, len(writes), len(keys))
		}
	})
}

// TestServerSizeDrivenGetPartials: reading more than a response holds
// yields UnprocessedKeys with no throttling; the engine goes on without
// backing off (any backoff here would last an hour).
func TestServerSizeDrivenGetPartials(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		table := srv.Table(t, "pk:S")
		c, _, rec := newClient(srv.Endpoint, 3)
		opt := func(o *Options) { o.KeyAttributes = map[string][]string{table: {"pk"}} }
		var writes []Write
		var keys []Key
		pad := strings.Repeat("x", 390_000)
		for i := range 45 { // 45 × 390 KB > 16 MB
			pk := fmt.Sprint("large", i)
			writes = append(writes, Write{Table: table, Put: pkItem(pk, "pad", s(pad))})
			keys = append(keys, Key{Table: table, Key: item{"pk": s(pk)}})
		}
		if _, err := WriteAll(context.Background(), c, writes, opt); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		items, st, err := Get(ctx, c, keys, opt, func(o *Options) {
			o.BaseDelay, o.MaxDelay = time.Hour, time.Hour
			o.jitter = func(d time.Duration) time.Duration { return d }
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != len(keys) {
			t.Errorf("read %d items, want %d", len(items), len(keys))
		}
		if st.UnprocessedRounds == 0 {
			t.Errorf("no partial result: stats %+v, calls %d", st, len(rec.of("BatchGetItem")))
		}
		t.Logf("%s: %d keys in %d requests (%d partial)", srv.Kind, len(keys), st.Requests, st.UnprocessedRounds)
	})
}

// TestServerWriteSeqOrdered streams writes through the proxy where half
// are returned unprocessed; repeated keys end with their last write.
func TestServerWriteSeqOrdered(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		pc := setupProxy(t, srv, faultproxy.Config{UnprocessedRate: 0.5, Ops: []string{"BatchWriteItem"}, Seed: 6}, 3)
		const keys, versions = 50, 6
		seq := func(yield func(Write) bool) {
			for v := range versions {
				for k := range keys {
					w := Write{Table: pc.table, Put: pkItem(fmt.Sprint("key", k), "v", n2(v))}
					if v == versions-1 && k%5 == 0 {
						w = Write{Table: pc.table, Delete: item{"pk": s(fmt.Sprint("key", k))}}
					}
					if !yield(w) {
						return
					}
				}
			}
		}
		st, err := WriteSeq(context.Background(), pc.client, seq, pc.opt, noWait, func(o *Options) { o.StallTimeout = time.Minute })
		if err != nil {
			t.Fatal(err)
		}
		got := scan(t, srv, pc.table)
		for k := range keys {
			it, ok := got[fmt.Sprint("key", k)]
			switch {
			case k%5 == 0 && ok:
				t.Errorf("key%d: present, want deleted by its last write", k)
			case k%5 != 0 && (!ok || it["v"].(*types.AttributeValueMemberN).Value != fmt.Sprint(versions-1)):
				t.Errorf("key%d: got %v, want v=%d", k, it, versions-1)
			}
		}
		if st.Done != keys*versions {
			t.Errorf("Done: got %d, want %d", st.Done, keys*versions)
		}
	})
}
