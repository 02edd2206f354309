package chunk

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// TestMain stops the servers and then checks that no goroutine of this
// package outlived its test (idle HTTP connections of SDK clients aside).
func TestMain(m *testing.M) {
	code := m.Run()
	ddbtest.Stop()
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

func (e *env) store(optFns ...func(*Options)) *Store {
	return New(e.c, e.parents, e.chunks, optFns...)
}

// robustClient is a client for an endpoint behind the fault proxy, set up
// as the package documentation recommends: more attempts, no client-side
// retry quota (which concurrent callers under faults would drain).
func robustClient(endpoint string) *dynamodb.Client {
	return localddb.NewClient(endpoint, func(o *dynamodb.Options) {
		o.Retryer = retry.AddWithMaxAttempts(retry.NewStandard(func(so *retry.StandardOptions) {
			so.RateLimiter = ratelimit.None
			so.MaxBackoff = 200 * time.Millisecond
		}), 10)
	})
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

// hookClient is the real client with hooks around each call, to count
// requests and to stop a caller at a chosen point. It fakes nothing.
type hookClient struct {
	Client
	mu     sync.Mutex
	calls  map[string]int
	before func(ctx context.Context, op string, n int) context.Context // n: 1-based count of op
	after  func(op string, n int, err error)
}

func newHookClient(c Client) *hookClient { return &hookClient{Client: c, calls: map[string]int{}} }

func (h *hookClient) enter(ctx context.Context, op string) (context.Context, int) {
	h.mu.Lock()
	h.calls[op]++
	n := h.calls[op]
	before := h.before
	h.mu.Unlock()
	if before != nil {
		if c := before(ctx, op, n); c != nil {
			ctx = c
		}
	}
	return ctx, n
}

func (h *hookClient) leave(op string, n int, err error) {
	h.mu.Lock()
	after := h.after
	h.mu.Unlock()
	if after != nil {
		after(op, n, err)
	}
}

func (h *hookClient) count(op string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[op]
}

func (h *hookClient) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.calls {
		n += c
	}
	return n
}

func (h *hookClient) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.calls)
}

func (h *hookClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	ctx, n := h.enter(ctx, "GetItem")
	out, err := h.Client.GetItem(ctx, in, o...)
	h.leave("GetItem", n, err)
	return out, err
}

func (h *hookClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	ctx, n := h.enter(ctx, "UpdateItem")
	out, err := h.Client.UpdateItem(ctx, in, o...)
	h.leave("UpdateItem", n, err)
	return out, err
}

func (h *hookClient) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	ctx, n := h.enter(ctx, "DeleteItem")
	out, err := h.Client.DeleteItem(ctx, in, o...)
	h.leave("DeleteItem", n, err)
	return out, err
}

func (h *hookClient) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	ctx, n := h.enter(ctx, "BatchWriteItem")
	out, err := h.Client.BatchWriteItem(ctx, in, o...)
	h.leave("BatchWriteItem", n, err)
	return out, err
}

func (h *hookClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	ctx, n := h.enter(ctx, "BatchGetItem")
	out, err := h.Client.BatchGetItem(ctx, in, o...)
	h.leave("BatchGetItem", n, err)
	return out, err
}

func (h *hookClient) Scan(ctx context.Context, in *dynamodb.ScanInput, o ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	ctx, n := h.enter(ctx, "Scan")
	out, err := h.Client.Scan(ctx, in, o...)
	h.leave("Scan", n, err)
	return out, err
}
