// Package ddbtest runs dynashard's integration tests against real
// DynamoDB-compatible servers: every test body runs once per selected server,
// like a conformance suite.
//
// The environment variable DYNASHARD_SERVER selects the servers: unset or
// "all" means both local servers (DynamoDB Local and dynalite), "ddblocal" or
// "dynalite" one of them, a comma-separated list several, and an http(s) URL
// an external endpoint such as real DynamoDB (credentials from the usual
// AWS_* variables). Local servers are installed on first use, started once
// per test binary, and stopped by Main. A server that cannot start fails the
// test with the reason; nothing is ever skipped.
package ddbtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/internal/localddb"
)

// Server is one server the tests run against.
type Server struct {
	Kind     localddb.Kind
	Endpoint string
}

type entry struct {
	once sync.Once
	srv  *localddb.Server
	err  error
}

var (
	mu      sync.Mutex
	started = map[localddb.Kind]*entry{}
)

// Main runs the tests and stops every server they started. Use it as
// func TestMain(m *testing.M) { ddbtest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops every server started so far.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	for k, e := range started {
		if e.srv != nil {
			e.srv.Close()
		}
		delete(started, k)
	}
}

// Selected lists the servers DYNASHARD_SERVER asks for, and for an external
// endpoint its URL.
func Selected() ([]localddb.Kind, string, error) {
	v := strings.TrimSpace(os.Getenv("DYNASHARD_SERVER"))
	if v == "" || v == "all" {
		return []localddb.Kind{localddb.DynamoDBLocal, localddb.Dynalite}, "", nil
	}
	if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
		return []localddb.Kind{localddb.External}, v, nil
	}
	var kinds []localddb.Kind
	for _, f := range strings.Split(v, ",") {
		switch k := localddb.Kind(strings.TrimSpace(f)); k {
		case localddb.DynamoDBLocal, localddb.Dynalite:
			kinds = append(kinds, k)
		default:
			return nil, "", fmt.Errorf("ddbtest: DYNASHARD_SERVER=%q: want ddblocal, dynalite, all or an http(s) URL", v)
		}
	}
	return kinds, "", nil
}

// Start returns the server of that kind, starting it on first use.
func Start(ctx context.Context, kind localddb.Kind) (*Server, error) {
	if kind == localddb.External {
		_, url, err := Selected()
		if err != nil {
			return nil, err
		}
		if url == "" {
			return nil, fmt.Errorf("ddbtest: external server needs DYNASHARD_SERVER=<url>")
		}
		return &Server{Kind: kind, Endpoint: url}, nil
	}
	mu.Lock()
	e := started[kind]
	if e == nil {
		e = &entry{}
		started[kind] = e
	}
	mu.Unlock()
	e.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute) // a first install downloads ~60 MB
		defer cancel()
		e.srv, e.err = localddb.Start(ctx, kind)
	})
	if e.err != nil {
		return nil, e.err
	}
	return &Server{Kind: kind, Endpoint: e.srv.Endpoint}, nil
}

// Get returns the server of that kind, failing tb if it cannot start.
func Get(tb testing.TB, kind localddb.Kind) *Server {
	tb.Helper()
	s, err := Start(context.Background(), kind)
	if err != nil {
		tb.Fatalf("ddbtest: %v", err)
	}
	return s
}

// Default returns the first selected server, for Examples and benchmarks
// that run against one server.
func Default() (*Server, error) {
	kinds, _, err := Selected()
	if err != nil {
		return nil, err
	}
	return Start(context.Background(), kinds[0])
}

// Each runs fn as a subtest named after each selected server.
func Each(t *testing.T, fn func(t *testing.T, s *Server)) {
	t.Helper()
	kinds, _, err := Selected()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			fn(t, Get(t, k))
		})
	}
}

// Client returns an SDK client for the server with the SDK's default
// retryer.
func (s *Server) Client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return localddb.NewClient(s.Endpoint, optFns...)
}

// PanicOn is an option for Server.Client: the client panics with v, in
// the goroutine that called it and before anything is sent, on every
// request of one of ops (operation names such as "BatchGetItem"; none
// means every operation), as a client wrapper or middleware with a bug
// would. Tests use it to show where such a panic surfaces; the other
// operations go to the server as usual.
func PanicOn(v any, ops ...string) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			if len(ops) > 0 && !slices.Contains(ops, st.ID()) {
				return nil
			}
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("ddbtest/panic",
				func(context.Context, middleware.InitializeInput, middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					panic(v)
				}), middleware.Before)
		})
	}
}

var tableSeq atomic.Int64

// TableName returns a name no other test in any process uses.
func TableName() string {
	return fmt.Sprintf("t%d_%d_%08x", os.Getpid(), tableSeq.Add(1), rand.Uint32())
}

// Table creates an on-demand table whose key is keys: "pk:S" for a simple
// key, "pk:S", "sk:N" for a composite one. It is deleted when tb ends.
func (s *Server) Table(tb testing.TB, keys ...string) string {
	tb.Helper()
	in, err := TableInput(keys...)
	if err != nil {
		tb.Fatal(err)
	}
	return s.CreateTable(tb, in)
}

// TableInput builds a CreateTableInput from "name:type" key specs.
func TableInput(keys ...string) (*dynamodb.CreateTableInput, error) {
	if len(keys) < 1 || len(keys) > 2 {
		return nil, fmt.Errorf("ddbtest: want 1 or 2 keys, got %q", keys)
	}
	in := &dynamodb.CreateTableInput{}
	for i, spec := range keys {
		name, typ, ok := strings.Cut(spec, ":")
		if !ok || name == "" || (typ != "S" && typ != "N" && typ != "B") {
			return nil, fmt.Errorf("ddbtest: key %q: want name:S, name:N or name:B", spec)
		}
		kt := types.KeyTypeHash
		if i == 1 {
			kt = types.KeyTypeRange
		}
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(name), AttributeType: types.ScalarAttributeType(typ),
		})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(name), KeyType: kt})
	}
	return in, nil
}

// CreateTable creates the table in (naming it uniquely and billing on demand
// unless in says otherwise) and deletes it when tb ends.
func (s *Server) CreateTable(tb testing.TB, in *dynamodb.CreateTableInput) string {
	tb.Helper()
	name, err := s.NewTable(context.Background(), in)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Client().DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// NewTable creates the table in and returns its name; the caller deletes it.
func (s *Server) NewTable(ctx context.Context, in *dynamodb.CreateTableInput) (string, error) {
	cp := *in
	if cp.TableName == nil {
		cp.TableName = aws.String(TableName())
	}
	if cp.BillingMode == "" && cp.ProvisionedThroughput == nil {
		cp.BillingMode = types.BillingModePayPerRequest
	}
	if err := localddb.CreateTable(ctx, s.Client(), &cp); err != nil {
		return "", err
	}
	return *cp.TableName, nil
}

// Transactions reports whether the server supports DynamoDB transactions
// (dynalite does not), which writes during a reshard need.
func (s *Server) Transactions() bool { return s.Kind != localddb.Dynalite }

// EachTx is Each on the selected servers that support transactions.
func EachTx(t *testing.T, fn func(t *testing.T, s *Server)) {
	Each(t, func(t *testing.T, s *Server) {
		if !s.Transactions() {
			t.Skipf("%s has no transactions: resharding refuses it (shard.ErrNoTransactions, tested on its own)", s.Kind)
		}
		fn(t, s)
	})
}

// NoEscape runs call and checks how it ended, for the tests that no panic
// escapes a goroutine of the library: when want is panicValue, call must
// panic with an error matching it, recovered here in the caller's
// goroutine (a panic on any other goroutine ends the test binary); when
// want is nil, it must return nil; otherwise its error must match want
// (and family, unless nil), and sent, the requests since the case began,
// must be 0: bad input is refused before any request.
func NoEscape(t *testing.T, call func() error, panicValue, want, family error, sent func() int) {
	t.Helper()
	v, err := func() (panicked any, err error) {
		defer func() { panicked = recover() }()
		return nil, call()
	}()
	switch {
	case want == panicValue:
		if e, ok := v.(error); !ok || !errors.Is(e, panicValue) {
			t.Errorf("recovered %v (error %v), want a panic matching %v in the caller's goroutine", v, err, panicValue)
		}
	case v != nil:
		t.Errorf("panicked: %v", v)
	case want == nil:
		if err != nil {
			t.Errorf("got %v, want no error", err)
		}
	default:
		if !errors.Is(err, want) || (family != nil && !errors.Is(err, family)) {
			t.Errorf("got %v, want %v (%v)", err, want, family)
		}
		if n := sent(); n != 0 {
			t.Errorf("%d requests, want 0", n)
		}
	}
}
