package dynashardtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
)

// fakeDynamoDB answers CreateTable and then DescribeTable with the
// scripted replies in turn (the last one forever), recording each request.
type fakeDynamoDB struct {
	create   string   // reply to CreateTable; "" means the table is CREATING
	describe []string // replies to DescribeTable

	mu        sync.Mutex
	targets   []string
	at        []time.Time    // when each DescribeTable came
	created   map[string]any // the CreateTable request
	describes int
}

const (
	notFound = `400 {"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"not yet"}`
	inUse    = `400 {"__type":"com.amazonaws.dynamodb.v20120810#ResourceInUseException","message":"exists"}`
	creating = `200 {"Table":{"TableName":"t","TableStatus":"CREATING"}}`
	gsiSlow  = `200 {"Table":{"TableName":"t","TableStatus":"ACTIVE","GlobalSecondaryIndexes":[{"IndexName":"g","IndexStatus":"CREATING"}]}}`
	ready    = `200 {"Table":{"TableName":"t","TableStatus":"ACTIVE","GlobalSecondaryIndexes":[{"IndexName":"g","IndexStatus":"ACTIVE"}]}}`
)

func (f *fakeDynamoDB) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	f.mu.Lock()
	f.targets = append(f.targets, op)
	reply := `400 {"__type":"com.amazon.coral.validate#ValidationException","message":"unexpected"}`
	switch op {
	case "CreateTable":
		json.Unmarshal(body, &f.created)
		reply = f.create
		if reply == "" {
			reply = `200 {"TableDescription":{"TableName":"t","TableStatus":"CREATING"}}`
		}
	case "DescribeTable":
		reply = f.describe[min(f.describes, len(f.describe)-1)]
		f.describes++
		f.at = append(f.at, time.Now())
	}
	f.mu.Unlock()
	code, payload, _ := strings.Cut(reply, " ")
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if code == "400" {
		w.WriteHeader(http.StatusBadRequest)
	}
	io.WriteString(w, payload)
}

func (f *fakeDynamoDB) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.targets...)
}

// fakeServer returns a handle on f through Options.Endpoint.
func fakeServer(t *testing.T, f *fakeDynamoDB) *Server {
	t.Helper()
	hs := httptest.NewServer(f)
	t.Cleanup(hs.Close)
	return Start(t, func(o *Options) { o.Endpoint = hs.URL })
}

func tableInput() *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String("t"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}
}

// TestCreateTableWaitsForActive: CreateTable returns only once the table
// and its indexes are ACTIVE, waiting through a table not found yet,
// polling at pollInterval rather than the SDK waiter's 20 s. The gaps
// between looks are at least pollInterval, at any speed, and each below
// the 20 s the waiter waits before a look: a bound no load reaches, not a
// speed.
func TestCreateTableWaitsForActive(t *testing.T) {
	f := &fakeDynamoDB{describe: []string{notFound, creating, creating, gsiSlow, ready}}
	s := fakeServer(t, f)
	in := tableInput()
	if err := s.CreateTable(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	want := []string{"CreateTable", "DescribeTable", "DescribeTable", "DescribeTable", "DescribeTable", "DescribeTable"}
	if got := f.requests(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests: got %v, want %v", got, want)
	}
	f.mu.Lock()
	at := slices.Clone(f.at)
	f.mu.Unlock()
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < pollInterval || gap >= 20*time.Second {
			t.Errorf("DescribeTable %d came %v after the one before; want at least %v, and less than the SDK waiter's 20 s", i+1, gap, pollInterval)
		}
	}
	if f.created["BillingMode"] != "PAY_PER_REQUEST" {
		t.Errorf("BillingMode sent: got %v, want PAY_PER_REQUEST", f.created["BillingMode"])
	}
	if in.BillingMode != "" {
		t.Errorf("caller's input modified: BillingMode = %q", in.BillingMode)
	}
}

// TestCreateTableKeepsProvisioned: an input with throughput is sent as is.
func TestCreateTableKeepsProvisioned(t *testing.T) {
	f := &fakeDynamoDB{describe: []string{ready}}
	s := fakeServer(t, f)
	in := tableInput()
	in.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}
	if err := s.CreateTable(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.created["BillingMode"]; ok {
		t.Errorf("BillingMode sent: got %v, want none", f.created["BillingMode"])
	}
}

// TestCreateTableNeverActive: ctx bounds the wait.
func TestCreateTableNeverActive(t *testing.T) {
	s := fakeServer(t, &fakeDynamoDB{describe: []string{creating}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.CreateTable(ctx, tableInput()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want an error matching context.DeadlineExceeded", err)
	}
}

// TestCreateTableRefused: DynamoDB's refusal comes back as the SDK error.
func TestCreateTableRefused(t *testing.T) {
	f := &fakeDynamoDB{create: inUse, describe: []string{ready}}
	s := fakeServer(t, f)
	var inUseErr *types.ResourceInUseException
	if err := s.CreateTable(context.Background(), tableInput()); !errors.As(err, &inUseErr) {
		t.Errorf("got %v, want a *types.ResourceInUseException", err)
	}
	if got := f.requests(); len(got) != 1 {
		t.Errorf("requests: got %v, want one CreateTable", got)
	}
}

// TestCreateTableInvalid: misuse fails before any request.
func TestCreateTableInvalid(t *testing.T) {
	f := &fakeDynamoDB{describe: []string{ready}}
	s := fakeServer(t, f)
	noName := tableInput()
	noName.TableName = nil
	for _, tc := range []struct {
		name string
		ctx  context.Context
		in   *dynamodb.CreateTableInput
	}{
		{"nil ctx", nil, tableInput()},
		{"nil input", context.Background(), nil},
		{"nil TableName", context.Background(), noName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.CreateTable(tc.ctx, tc.in); !errors.Is(err, dynashard.ErrInvalid) {
				t.Errorf("got %v, want an error matching dynashard.ErrInvalid", err)
			}
		})
	}
	if got := f.requests(); len(got) != 0 {
		t.Errorf("requests: got %v, want none", got)
	}
}

var validTableName = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)

func TestTableName(t *testing.T) {
	for _, tc := range []struct {
		prefix, want string
	}{
		{"orders", "orders-"},
		{"", "t-"},
		{"TestX/sub case", "TestX_sub_case-"},
		{"héllo", "h__llo-"},
		{"a.b_c-d", "a.b_c-d-"},
		{strings.Repeat("x", 300), strings.Repeat("x", maxPrefix) + "-"},
	} {
		got := TableName(tc.prefix)
		if !validTableName.MatchString(got) || !strings.HasPrefix(got, tc.want) {
			t.Errorf("TableName(%q) = %q, want a valid name starting %q", tc.prefix, got, tc.want)
		}
	}
	seen := map[string]bool{}
	for range 10000 {
		n := TableName("x")
		if seen[n] {
			t.Fatalf("TableName returned %q twice", n)
		}
		seen[n] = true
	}
}
