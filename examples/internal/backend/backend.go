// Package backend connects dynashard's example services to DynamoDB: an
// embedded local server started (and stopped) by the program, or an
// endpoint someone else runs, including real AWS.
//
// The examples cannot load the standard AWS configuration (shared config
// files, profiles, SSO, instance roles): that needs
// github.com/aws/aws-sdk-go-v2/config, which this module does not depend
// on. For real AWS they read credentials from AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN and the region from
// AWS_REGION (default us-east-1), which is what localddb.NewClient does.
package backend

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/localddb"
)

// Config says which DynamoDB to use. The zero value starts an embedded
// DynamoDB Local.
type Config struct {
	// Endpoint is a DynamoDB endpoint URL to use instead of an embedded
	// server. Default: $DYNASHARD_ENDPOINT, else $AWS_ENDPOINT_URL_DYNAMODB.
	Endpoint string
	// AWS uses real DynamoDB in $AWS_REGION with credentials from the
	// environment.
	AWS bool
	// Server is the embedded server's kind when no endpoint is given:
	// localddb.DynamoDBLocal (default) or localddb.Dynalite.
	Server localddb.Kind
}

// RegisterFlags adds -endpoint, -aws and -server to fs, filling c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	def := os.Getenv("DYNASHARD_ENDPOINT")
	if def == "" {
		def = os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
	}
	fs.StringVar(&c.Endpoint, "endpoint", def,
		"DynamoDB endpoint URL (default $DYNASHARD_ENDPOINT or $AWS_ENDPOINT_URL_DYNAMODB; empty: start an embedded server)")
	fs.BoolVar(&c.AWS, "aws", false,
		"use real DynamoDB in $AWS_REGION with credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN")
	fs.Func("server", "embedded server: ddblocal (DynamoDB Local, needs Java 17) or dynalite (needs Node.js)", func(s string) error {
		switch k := localddb.Kind(s); k {
		case localddb.DynamoDBLocal, localddb.Dynalite:
			c.Server = k
			return nil
		}
		return fmt.Errorf("want ddblocal or dynalite, got %q", s)
	})
}

// Backend is an open connection to DynamoDB. Close stops the embedded
// server, if there is one.
type Backend struct {
	// Client talks to the backend; every request it sends is counted in
	// Requests.
	Client *dynamodb.Client
	// Where describes the backend for logs: "embedded DynamoDB Local at
	// http://127.0.0.1:port", "http://host:port", "AWS us-east-1".
	Where string
	// Embedded names the server Open started ("DynamoDB Local",
	// "dynalite"), or is empty if it started none.
	Embedded string
	// Remote is true for real AWS, where tables take seconds to create and
	// cost money to keep.
	Remote bool
	// Requests counts DynamoDB requests by operation.
	Requests *Counter

	srv *localddb.Server
}

// Open connects to the backend cfg names, starting an embedded server if
// it names none.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	b := &Backend{Requests: &Counter{}}
	endpoint := cfg.Endpoint
	switch {
	case cfg.AWS:
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
			return nil, errors.New("backend: -aws needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment (shared config files and profiles are not read)")
		}
		region := os.Getenv("AWS_REGION")
		if region == "" {
			region = "us-east-1"
		}
		if endpoint == "" {
			endpoint = "https://dynamodb." + region + ".amazonaws.com"
		}
		b.Where, b.Remote = "AWS "+region+" ("+endpoint+")", true
	case endpoint != "":
		b.Where = endpoint
		b.Remote = !strings.Contains(endpoint, "://127.0.0.1") && !strings.Contains(endpoint, "://localhost")
	default:
		kind := cfg.Server
		if kind == "" {
			kind = localddb.DynamoDBLocal
		}
		srv, err := localddb.Start(ctx, kind)
		if err != nil {
			return nil, fmt.Errorf("backend: start embedded %s: %w", kind, err)
		}
		b.srv, endpoint, b.Embedded = srv, srv.Endpoint, describe(kind)
		b.Where = fmt.Sprintf("embedded %s at %s", b.Embedded, endpoint)
	}
	b.Client = NewClient(endpoint, b.Requests)
	return b, nil
}

func describe(k localddb.Kind) string {
	if k == localddb.Dynalite {
		return "dynalite"
	}
	return "DynamoDB Local"
}

// NewClient returns a client for endpoint with the retry settings the
// library recommends for fan-out (more attempts, no client-side retry
// quota, so one throttled scatter cannot starve every other request),
// counting requests in n if it is not nil.
func NewClient(endpoint string, n *Counter) *dynamodb.Client {
	return localddb.NewClient(endpoint, func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 8
			so.RateLimiter = ratelimit.None
		})
		if n != nil {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			// A scatter read sends one Query per shard at once; keep
			// those connections for the next one.
			tr.MaxIdleConnsPerHost = 64
			o.HTTPClient = &http.Client{Transport: countingTransport{tr, n}}
		}
	})
}

// Close stops the embedded server, if any. Safe to call more than once.
func (b *Backend) Close() error {
	if b.srv != nil {
		return b.srv.Close()
	}
	return nil
}

// EnsureTable creates the table in describes unless it exists, and waits
// until it is ACTIVE. It polls every 50 ms (1 s on real AWS): the SDK's
// waiter sleeps 20 s first, which a local server never needs.
func (b *Backend) EnsureTable(ctx context.Context, in *dynamodb.CreateTableInput) error {
	name := aws.ToString(in.TableName)
	cp := *in
	if cp.BillingMode == "" && cp.ProvisionedThroughput == nil {
		cp.BillingMode = types.BillingModePayPerRequest
	}
	poll := 50 * time.Millisecond
	if b.Remote {
		poll = time.Second
	}
	for created := false; ; {
		out, err := b.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
		var nf *types.ResourceNotFoundException
		switch {
		case errors.As(err, &nf) && !created:
			_, err := b.Client.CreateTable(ctx, &cp)
			var inUse *types.ResourceInUseException
			if err != nil && !errors.As(err, &inUse) { // in use: another process created it first
				return fmt.Errorf("backend: create table %s: %w", name, err)
			}
			created = true
		case errors.As(err, &nf):
			// Created a moment ago and not yet visible: keep polling.
		case err != nil:
			return fmt.Errorf("backend: describe table %s: %w", name, err)
		case out.Table.TableStatus == types.TableStatusActive:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("backend: table %s not active: %w", name, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// DeleteTables deletes the named tables, ignoring those that do not exist.
func (b *Backend) DeleteTables(ctx context.Context, names ...string) error {
	var errs []error
	for _, n := range names {
		_, err := b.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		var nf *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &nf) {
			errs = append(errs, fmt.Errorf("backend: delete table %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// Counter counts DynamoDB requests by operation (BatchWriteItem, Query,
// …), each SDK retry as a request of its own. Safe for concurrent use.
type Counter struct {
	mu sync.Mutex
	n  map[string]int64
}

func (c *Counter) add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int64{}
	}
	c.n[op]++
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := make(Counts, len(c.n))
	for k, v := range c.n {
		s[k] = v
	}
	return s
}

// Counts maps an operation name to a request count.
type Counts map[string]int64

// Sub returns c minus earlier: the requests made in between.
func (c Counts) Sub(earlier Counts) Counts {
	d := Counts{}
	for k, v := range c {
		if v -= earlier[k]; v != 0 {
			d[k] = v
		}
	}
	return d
}

// Total is the number of requests of every operation.
func (c Counts) Total() int64 {
	var t int64
	for _, v := range c {
		t += v
	}
	return t
}

// String lists the counts by operation name: "BatchWriteItem 3, Query 16".
func (c Counts) String() string {
	ops := make([]string, 0, len(c))
	for k := range c {
		ops = append(ops, k)
	}
	sort.Strings(ops)
	parts := make([]string, len(ops))
	for i, k := range ops {
		parts[i] = fmt.Sprintf("%s %d", k, c[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// countingTransport counts requests by the operation in X-Amz-Target
// ("DynamoDB_20120810.Query"), which every DynamoDB request carries.
type countingTransport struct {
	next http.RoundTripper
	n    *Counter
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	t.n.add(op)
	return t.next.RoundTrip(r)
}
