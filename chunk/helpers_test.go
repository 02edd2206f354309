package chunk

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/exampletest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// long runs the package's long modes (make test-long): the full-size
// round trips, the property and history checkers at ten times the work.
// Without it each test keeps its assertions on a smaller workload.
var long = flag.Bool("chunk.long", false, "run the long modes: the full-size round trips, more property cases and a longer history")

// TestMain stops the servers (DynamoDB's and s3rver) and then checks that no goroutine of this
// package outlived its test (idle HTTP connections of SDK clients aside).
// The Examples share one dynashardtest server (exampletest.Hold) instead
// of starting a JVM each.
func TestMain(m *testing.M) {
	release := exampletest.Hold()
	code := m.Run()
	release()
	ddbtest.Stop()
	stopS3()
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// eachParallel is ddbtest.Each with the servers' runs in parallel. The
// package's longest tests wait on requests more than they compute, so two
// servers at once take little longer than one.
func eachParallel(t *testing.T, fn func(t *testing.T, srv *ddbtest.Server)) {
	t.Helper()
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		t.Parallel()
		fn(t, srv)
	})
}

// env is a parent table and a chunk table on one server.
type env struct {
	srv             *ddbtest.Server
	c               *dynamodb.Client
	parents, chunks string
}

func newEnv(t testing.TB, srv *ddbtest.Server, parentKeys ...string) *env {
	t.Helper()
	if len(parentKeys) == 0 {
		parentKeys = []string{"pk:S"}
	}
	return &env{srv: srv, c: srv.Client(), parents: srv.Table(t, parentKeys...), chunks: srv.Table(t, "ChunkKey:S")}
}

// store returns a Store on e's tables through e's client.
func (e *env) store(t testing.TB, optFns ...func(*Options)) *Store {
	t.Helper()
	return newStore(t, e.c, e.parents, e.chunks, optFns...)
}

// newStore is New, failing the test on an error.
func newStore(t testing.TB, c Client, parents, chunks string, optFns ...func(*Options)) *Store {
	t.Helper()
	st, err := New(c, parents, chunks, optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// robustClient is a client for an endpoint behind the fault proxy, set up
// as the package documentation recommends: more attempts, no client-side
// retry quota (which concurrent callers under faults would drain).
func robustClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return localddb.NewClient(endpoint, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.Retryer = retry.AddWithMaxAttempts(retry.NewStandard(func(so *retry.StandardOptions) {
			dynashard.RetryForFanOut(so)
			so.MaxBackoff = 200 * time.Millisecond
		}), 10)
	}}, optFns...)...)
}

// newProxy starts a fault proxy, without faults until configured, in
// front of srv, closed when the test ends, and returns it with a robust
// client of it.
func newProxy(t testing.TB, srv *ddbtest.Server) (*faultproxy.Proxy, *dynamodb.Client) {
	t.Helper()
	proxy, err := faultproxy.New(srv.Endpoint, faultproxy.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	return proxy, robustClient(proxy.URL())
}

// chunkKeys returns every key in the chunk table, sorted.
func (e *env) chunkKeys(t testing.TB) []string {
	t.Helper()
	var keys []string
	in := &dynamodb.ScanInput{TableName: &e.chunks, ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("ChunkKey")}
	for {
		out, err := e.c.Scan(context.Background(), in)
		if err != nil {
			t.Fatalf("scan chunks: %v", err)
		}
		for _, it := range out.Items {
			keys = append(keys, it["ChunkKey"].(*types.AttributeValueMemberS).Value)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	slices.Sort(keys)
	return keys
}

// versionKeys returns the chunk keys a version of key must have, sorted.
func versionKeys(t testing.TB, key Key, info Info) []string {
	t.Helper()
	prefix, err := key.prefix()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for seq := 1; seq <= info.Chunks; seq++ {
		keys = append(keys, chunkKey(prefix, info.Version, seq))
	}
	slices.Sort(keys)
	return keys
}

// probe counts the calls of a real SDK client by operation, and the chunk
// bytes its BatchGetItem responses carry, and runs hooks around each call,
// from a middleware in the client's Initialize step (once per call, the
// SDK's retries inside it). Nothing is faked.
type probe struct {
	mu         sync.Mutex
	calls      map[string]int
	chunkBytes int64
	consistent []bool // ConsistentRead of each GetItem, in order
	// before runs as call n (1-based) of op starts, after as it returns.
	before func(op string, n int)
	after  func(op string, n int, err error)
}

func newProbe() *probe { return &probe{calls: map[string]int{}} }

// option installs p in a client: pass it to ddbtest.Server.Client or
// robustClient.
func (p *probe) option(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, p.install) }

// countingClient returns a client of e's server whose calls a probe sees.
func (e *env) countingClient() (*dynamodb.Client, *probe) {
	p := newProbe()
	return e.srv.Client(p.option), p
}

func (p *probe) install(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("chunkTestProbe",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			p.mu.Lock()
			p.calls[op]++
			n, before := p.calls[op], p.before
			if get, ok := in.Parameters.(*dynamodb.GetItemInput); ok {
				p.consistent = append(p.consistent, aws.ToBool(get.ConsistentRead))
			}
			p.mu.Unlock()
			if before != nil {
				before(op, n)
			}
			out, md, err := next.HandleInitialize(ctx, in)
			var bytes int64
			if res, ok := out.Result.(*dynamodb.BatchGetItemOutput); ok {
				for _, items := range res.Responses {
					for _, it := range items {
						if d, ok := it[attrData].(*types.AttributeValueMemberB); ok {
							bytes += int64(len(d.Value))
						}
					}
				}
			}
			p.mu.Lock()
			p.chunkBytes += bytes
			after := p.after
			p.mu.Unlock()
			if after != nil {
				after(op, n, err)
			}
			return out, md, err
		}), middleware.After)
}

func (p *probe) count(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[op]
}

func (p *probe) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.calls {
		n += c
	}
	return n
}

// fetched returns the chunk bytes BatchGetItem responses carried.
func (p *probe) fetched() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chunkBytes
}

func (p *probe) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.calls)
	p.chunkBytes = 0
	p.consistent = nil
}

// consistentReads returns the ConsistentRead of each GetItem since the
// last reset.
func (p *probe) consistentReads() []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.consistent)
}

// hooks sets the hooks; nil removes them.
func (p *probe) hooks(before func(op string, n int), after func(op string, n int, err error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.before, p.after = before, after
}
