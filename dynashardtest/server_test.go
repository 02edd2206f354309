package dynashardtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
)

var kinds = []Kind{DynamoDBLocal, Dynalite}

func withKind(k Kind) func(*Options) { return func(o *Options) { o.Kind = k } }

// answers reports whether a DynamoDB API answers at endpoint, with one
// attempt and a short timeout.
func answers(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s := &Server{endpoint: endpoint, sh: &shared{}}
	_, err := s.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }).ListTables(ctx, &dynamodb.ListTablesInput{})
	return err
}

// children counts the live processes whose parent is this test binary, or
// returns -1 where /proc does not tell.
func children(t *testing.T) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		return -1
	}
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 1 && fields[0] != "Z" && fields[1] == strconv.Itoa(os.Getpid()) {
			n++
		}
	}
	return n
}

func wantChildren(t *testing.T, want int) {
	t.Helper()
	if got := children(t); got != -1 && got != want {
		t.Errorf("child processes: got %d, want %d", got, want)
	}
}

func isRunning(k Kind) bool {
	mu.Lock()
	defer mu.Unlock()
	return running[k] != nil
}

// roundTrip creates a table with a composite key and an index, checks it is
// ACTIVE as soon as CreateTable returns, and writes and reads an item.
func roundTrip(t *testing.T, s *Server) {
	t.Helper()
	ctx := context.Background()
	table := TableName(t.Name())
	err := s.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Client()
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if !active(d.Table) {
		t.Errorf("after CreateTable: table %s, indexes %+v, want all ACTIVE", d.Table.TableStatus, d.Table.GlobalSecondaryIndexes)
	}
	key := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "a"},
		"sk": &types.AttributeValueMemberN{Value: "1"},
	}
	item := map[string]types.AttributeValue{"g": &types.AttributeValueMemberS{Value: "héllo"}}
	for k, v := range key {
		item[k] = v
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := out.Item["g"].(*types.AttributeValueMemberS); !ok || g.Value != "héllo" {
		t.Errorf("got g = %#v, want héllo", out.Item["g"])
	}
}

// TestStart starts each kind through Start, uses it, and logs how long the
// start took.
func TestStart(t *testing.T) {
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			t0 := time.Now()
			s := Start(t, withKind(k))
			t.Logf("%s started in %v at %s", k, time.Since(t0).Round(time.Millisecond), s.Endpoint())
			if s.Kind() != k {
				t.Errorf("Kind() = %q, want %q", s.Kind(), k)
			}
			if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") {
				t.Errorf("Endpoint() = %q, want http://127.0.0.1:port", s.Endpoint())
			}
			roundTrip(t, s)
		})
	}
	for _, k := range kinds {
		if isRunning(k) {
			t.Errorf("%s still running after every Start's cleanup", k)
		}
	}
}

// TestZeroOptions: no options at all mean DynamoDB Local.
func TestZeroOptions(t *testing.T) {
	s, err := NewServer()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Kind() != DynamoDBLocal {
		t.Errorf("Kind() = %q, want %q", s.Kind(), DynamoDBLocal)
	}
	if err := answers(s.Endpoint()); err != nil {
		t.Error(err)
	}
}

// TestSharing: two handles share one process and its tables; closing one
// (twice) leaves the other working; closing the last stops the process.
func TestSharing(t *testing.T) {
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			ctx := context.Background()
			a, err := NewServer(withKind(k))
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewServer(withKind(k))
			if err != nil {
				a.Close()
				t.Fatal(err)
			}
			if a.Endpoint() != b.Endpoint() || a.sh != b.sh {
				t.Errorf("endpoints %s and %s: want one shared server", a.Endpoint(), b.Endpoint())
			}
			wantChildren(t, 1)

			table := TableName("shared")
			in := &dynamodb.CreateTableInput{
				TableName:            aws.String(table),
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			}
			if err := a.CreateTable(ctx, in); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Client().DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
				t.Errorf("table created through one handle, described through the other: %v", err)
			}

			if err := a.Close(); err != nil {
				t.Errorf("first Close: %v", err)
			}
			if err := a.Close(); err != nil {
				t.Errorf("second Close of the same handle: %v", err)
			}
			if err := answers(b.Endpoint()); err != nil {
				t.Fatalf("after closing the other handle (twice): %v", err)
			}
			if _, err := b.Client().DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
				t.Errorf("table gone after closing the other handle: %v", err)
			}
			wantChildren(t, 1)

			if err := b.Close(); err != nil {
				t.Errorf("last Close: %v", err)
			}
			if err := answers(b.Endpoint()); err == nil {
				t.Errorf("%s still answers after the last Close", b.Endpoint())
			}
			wantChildren(t, 0)
			if isRunning(k) {
				t.Errorf("%s still registered after the last Close", k)
			}
		})
	}
}

// TestConcurrentNewServer: handles opened and closed concurrently share one
// server, which stops after the last Close.
func TestConcurrentNewServer(t *testing.T) {
	const n = 8
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { servers[i], errs[i] = NewServer(withKind(Dynalite)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers[1:] {
		if s.Endpoint() != servers[0].Endpoint() {
			t.Errorf("endpoints %s and %s: want one shared server", s.Endpoint(), servers[0].Endpoint())
		}
	}
	wantChildren(t, 1)
	for _, s := range servers {
		wg.Go(func() {
			if err := answers(s.Endpoint()); err != nil {
				t.Error(err)
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := answers(servers[0].Endpoint()); err == nil {
		t.Errorf("%s still answers after every handle closed", servers[0].Endpoint())
	}
	wantChildren(t, 0)
}

// TestEndpoint: a handle on an existing server talks to it, reports the
// Kind it was given, and its Close leaves the server running.
func TestEndpoint(t *testing.T) {
	base := Start(t, withKind(Dynalite))
	s, err := NewServer(func(o *Options) { o.Endpoint = base.Endpoint(); o.Kind = Dynalite })
	if err != nil {
		t.Fatal(err)
	}
	if s.Endpoint() != base.Endpoint() || s.Kind() != Dynalite {
		t.Errorf("got %s %s, want %s %s", s.Endpoint(), s.Kind(), base.Endpoint(), Dynalite)
	}
	wantChildren(t, 1) // base's server only
	roundTrip(t, s)
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if err := answers(base.Endpoint()); err != nil {
		t.Errorf("server stopped by closing an Endpoint handle: %v", err)
	}

	s, err = NewServer(func(o *Options) { o.Endpoint = base.Endpoint() })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Kind() != DynamoDBLocal {
		t.Errorf("Kind() of an Endpoint without Kind = %q, want %q", s.Kind(), DynamoDBLocal)
	}
}

// TestBadOptions: misuse fails with dynashard.ErrInvalid, starts nothing and
// panics nowhere.
func TestBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(*Options)
	}{
		{"unknown kind", withKind("mysql")},
		{"kind in capitals", withKind("DDBLOCAL")},
		{"external kind", withKind("external")},
		{"endpoint without scheme", func(o *Options) { o.Endpoint = "127.0.0.1:8000" }},
		{"endpoint without host", func(o *Options) { o.Endpoint = "http://" }},
		{"endpoint of another scheme", func(o *Options) { o.Endpoint = "ftp://127.0.0.1" }},
		{"bad kind with endpoint", func(o *Options) { o.Endpoint = "http://127.0.0.1:8000"; o.Kind = "mysql" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewServer(nil, tc.fn)
			if !errors.Is(err, dynashard.ErrInvalid) || s != nil {
				t.Errorf("got %v, %v, want nil, an error matching dynashard.ErrInvalid", s, err)
			}
			tb := &fatalTB{TB: t}
			if s := Start(tb, tc.fn); s != nil || len(tb.fatal) != 1 || tb.cleanups != 0 {
				t.Errorf("Start: got %v, Fatal %v, %d cleanups, want nil, one Fatal, no cleanup", s, tb.fatal, tb.cleanups)
			} else if err, _ := tb.fatal[0].(error); !errors.Is(err, dynashard.ErrInvalid) {
				t.Errorf("Start: Fatal(%v), want an error matching dynashard.ErrInvalid", tb.fatal[0])
			}
			for _, k := range kinds {
				if isRunning(k) {
					t.Errorf("%s started for bad options", k)
				}
			}
		})
	}
}

// fatalTB records Fatal instead of stopping the test.
type fatalTB struct {
	testing.TB
	fatal    []any
	cleanups int
}

func (f *fatalTB) Helper()           {}
func (f *fatalTB) Fatal(args ...any) { f.fatal = append(f.fatal, args...) }
func (f *fatalTB) Cleanup(func())    { f.cleanups++ }

// TestMissingRuntime: without java or node on PATH, NewServer says what to
// install, before any download.
func TestMissingRuntime(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		tool string
	}{{DynamoDBLocal, "java"}, {Dynalite, "node"}} {
		t.Run(string(tc.kind), func(t *testing.T) {
			t.Setenv("PATH", t.TempDir())
			t.Setenv("DYNASHARD_CACHE", t.TempDir()) // an install would land here
			s, err := NewServer(withKind(tc.kind))
			var mt *missingToolError
			if !errors.As(err, &mt) || mt.tool != tc.tool || mt.install == "" || s != nil {
				t.Fatalf("got %v, %v, want an error naming %s and what to install", s, err, tc.tool)
			}
			t.Log(err)
			if isRunning(tc.kind) {
				t.Errorf("%s registered after a failed start", tc.kind)
			}
		})
	}
	// A failed start is not cached: with the runtime back, the next call
	// starts the server.
	s := Start(t, withKind(Dynalite))
	if err := answers(s.Endpoint()); err != nil {
		t.Error(err)
	}
}
