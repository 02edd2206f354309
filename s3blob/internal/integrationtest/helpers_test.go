package integrationtest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/chunkhook"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/locals3"
	"github.com/dynashard/dynashard/s3blob"
	"github.com/dynashard/dynashard/s3blob/internal/integrationtest/s3fault"
)

// TestMain stops the servers and then checks that no goroutine outlived
// its test (idle HTTP connections of SDK clients aside).
func TestMain(m *testing.M) {
	code := m.Run()
	ddbtest.Stop()
	s3srv.mu.Lock()
	if s3srv.s != nil {
		s3srv.s.Close()
	}
	s3srv.mu.Unlock()
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

// s3srv is the s3rver every test of the package shares.
var s3srv struct {
	mu  sync.Mutex
	s   *locals3.Server
	err error
}

func s3Server(t testing.TB) *locals3.Server {
	t.Helper()
	s3srv.mu.Lock()
	defer s3srv.mu.Unlock()
	if s3srv.s == nil && s3srv.err == nil {
		s3srv.s, s3srv.err = locals3.Start(context.Background())
	}
	if s3srv.err != nil {
		t.Fatal(s3srv.err)
	}
	return s3srv.s
}

// newS3Client is an SDK client for a local endpoint, path-style, with
// s3rver's built-in credentials (it checks signatures).
func newS3Client(endpoint string, optFns ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "S3RVER", SecretAccessKey: "S3RVER", Source: "s3rver"}, nil
		}),
	}, optFns...)
}

var bucketSeq atomic.Int64

// env is a parent table and a chunk table on one DynamoDB server, and a
// fresh bucket on the shared s3rver, reached directly (s3) or through a
// fault proxy (proxy, s3p).
type env struct {
	ddb             *dynamodb.Client
	parents, chunks string
	s3              *s3.Client
	bucket          string
	proxy           *s3fault.Proxy
	s3p             *s3.Client
}

func newEnv(t testing.TB, srv *ddbtest.Server) *env {
	t.Helper()
	s := s3Server(t)
	e := &env{ddb: srv.Client(), parents: srv.Table(t, "pk:S"), chunks: srv.Table(t, "ChunkKey:S"), s3: newS3Client(s.Endpoint)}
	e.bucket = fmt.Sprintf("dynashard-test-%d-%d", os.Getpid(), bucketSeq.Add(1))
	if _, err := e.s3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &e.bucket}); err != nil {
		t.Fatal(err)
	}
	p, err := s3fault.Start(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	e.proxy = p
	e.s3p = newS3Client(p.URL, quickRetries)
	return e
}

// quickRetries keeps the SDK's three attempts against the fault proxy but
// backs off at most 50 ms between them, not up to 20 s: a fault injected
// for good then fails a Put in milliseconds.
func quickRetries(o *s3.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = 50 * time.Millisecond })
}

// long runs the package's long modes (make test-long): the full sizes of
// the tests that shrink theirs by default, with the same assertions.
var long = flag.Bool("s3blob.long", false, "run the long modes: a 100 MiB round trip, eight Puts under torn-read readers")

// blob is a Bucket on e's bucket through c (e.s3 or e.s3p).
func (e *env) blob(t testing.TB, c s3blob.Client, optFns ...func(*s3blob.Options)) *s3blob.Bucket {
	t.Helper()
	b, err := s3blob.New(c, e.bucket, optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// store is a chunk.Store on e's tables through ddb, offloading to objs.
func (e *env) store(t testing.TB, ddb chunk.Client, objs chunk.ObjectStore, optFns ...func(*chunk.Options)) *chunk.Store {
	t.Helper()
	st, err := chunk.New(ddb, e.parents, e.chunks, append([]func(*chunk.Options){func(o *chunk.Options) { o.Objects = objs }}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// objects lists the bucket's keys, sorted.
func (e *env) objects(t testing.TB) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(e.s3, &s3.ListObjectsV2Input{Bucket: &e.bucket})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, *o.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

// objectsOf lists the bucket's keys that hold versions of the parent
// rendered as name.
func (e *env) objectsOf(t testing.TB, name string) []string {
	t.Helper()
	var out []string
	for _, k := range e.objects(t) {
		if strings.Contains(k, "/"+name+"/") {
			out = append(out, k)
		}
	}
	return out
}

// exists reports whether the bucket holds key.
func (e *env) exists(t testing.TB, key string) bool {
	t.Helper()
	_, err := e.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &e.bucket, Key: &key})
	if err == nil {
		return true
	}
	b := e.blob(t, e.s3)
	if _, err := b.Metadata(context.Background(), key); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("head %s: %v", key, err)
	}
	return false
}

func sKey(v string) chunk.Key {
	return chunk.Key{PartitionName: "pk", Partition: &ddbtypes.AttributeValueMemberS{Value: v}}
}

// payload returns n deterministic bytes that differ with seed.
func payload(n int, seed uint64) []byte {
	b := make([]byte, n)
	fill(b, seed, 0)
	return b
}

// fill writes the bytes of the payload of seed from offset off into b.
func fill(b []byte, seed uint64, off int64) {
	for i := range b {
		x := uint64(off+int64(i))/8 ^ seed*0x9E3779B97F4A7C15
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], x*0xBF58476D1CE4E5B9)
		b[i] = w[(off+int64(i))%8]
	}
}

// genReader streams the payload of seed, n bytes long, without holding it;
// it has no Len method.
type genReader struct {
	seed uint64
	off  int64
	n    int64
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.off >= g.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.n-g.off)]
	fill(p, g.seed, g.off)
	g.off += int64(len(p))
	return len(p), nil
}

// later returns a clock d ahead of the real one.
func later(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

func setClock(st *chunk.Store, now func() time.Time) { chunkhook.SetClock(st, now) }

// ddbHooks is a DynamoDB client option calling before and after each
// request (a wrapper around the real client, to stop a Put at a chosen
// point).
func ddbHooks(before func(ctx context.Context, op string), after func(op string, err error)) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("testhooks",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					op := middleware.GetOperationName(ctx)
					if before != nil {
						before(ctx, op)
					}
					out, md, err := next.HandleInitialize(ctx, in)
					if after != nil {
						after(op, err)
					}
					return out, md, err
				}), middleware.Before)
		})
	}
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
