// Package backend connects dynashard's example services to DynamoDB, in one
// of three ways:
//
//   - by default, an embedded local server started (and stopped) by the
//     program through the public test kit, dynashardtest: DynamoDB Local,
//     or dynalite with -server dynalite;
//   - -endpoint URL: a DynamoDB-compatible server someone else runs, signed
//     with region $AWS_REGION (default us-east-1) and the credentials in
//     AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, or dummy
//     ones when those are unset (local servers accept any);
//   - -aws: real DynamoDB through config.LoadDefaultConfig, so region and
//     credentials come from the SDK's usual chain: environment, shared
//     config and credentials files (AWS_PROFILE), IAM Identity Center
//     (SSO), assumed roles, container and instance roles.
//
// Every client retries with retry.NewStandard(dynashard.RetryForFanOut):
// a scatter read sends N Queries at once through one client, and the
// SDK's default retry quota would make one throttled read fail every
// other request on the client.
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
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest"
)

// Config says which DynamoDB to use. The zero value starts an embedded
// DynamoDB Local.
type Config struct {
	// Endpoint is a DynamoDB endpoint URL to use instead of an embedded
	// server; with AWS, it replaces the regional endpoint (a VPC or FIPS
	// endpoint, say). Default: $DYNASHARD_ENDPOINT, else
	// $AWS_ENDPOINT_URL_DYNAMODB.
	Endpoint string
	// AWS uses real DynamoDB, with region and credentials from the SDK's
	// default chain (config.LoadDefaultConfig).
	AWS bool
	// Server is the embedded server's kind when neither Endpoint nor AWS
	// is set: dynashardtest.DynamoDBLocal (default) or
	// dynashardtest.Dynalite.
	Server dynashardtest.Kind
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
		"use real DynamoDB, with region and credentials from the AWS SDK's default chain (environment, AWS_PROFILE, SSO, roles)")
	fs.Func("server", "embedded server: ddblocal (DynamoDB Local, needs Java 17) or dynalite (needs Node.js 20)", func(s string) error {
		switch k := dynashardtest.Kind(s); k {
		case dynashardtest.DynamoDBLocal, dynashardtest.Dynalite:
			c.Server = k
			return nil
		}
		return fmt.Errorf("want %s or %s, got %q", dynashardtest.DynamoDBLocal, dynashardtest.Dynalite, s)
	})
}

// Backend is an open connection to DynamoDB. Close stops the embedded
// server, if there is one.
type Backend struct {
	// Client talks to the backend; every request it sends is counted in
	// Requests.
	Client *dynamodb.Client
	// Where describes the backend for logs: "embedded DynamoDB Local at
	// http://127.0.0.1:port", "http://host:port", "AWS eu-west-1".
	Where string
	// Embedded names the server Open started ("DynamoDB Local",
	// "dynalite"), or is empty if it started none.
	Embedded string
	// Remote is true for real AWS, where tables take seconds to create and
	// cost money to keep.
	Remote bool
	// Requests counts DynamoDB requests by operation.
	Requests *Counter

	srv *dynashardtest.Server // the embedded server's handle, or nil
}

// Open connects to the backend cfg names, starting an embedded server if
// it names none. For AWS it checks that the default chain yields a region
// and credentials, so a missing profile or an expired SSO session is
// reported here rather than by the first request.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	b := &Backend{Requests: &Counter{}}
	switch {
	case cfg.AWS:
		c, where, err := awsClient(ctx, cfg.Endpoint, b.Requests)
		if err != nil {
			return nil, err
		}
		b.Client, b.Where, b.Remote = c, where, true
	case cfg.Endpoint != "":
		c, err := EndpointClient(cfg.Endpoint, b.Requests)
		if err != nil {
			return nil, err
		}
		b.Client, b.Where = c, cfg.Endpoint
		b.Remote = !strings.Contains(cfg.Endpoint, "://127.0.0.1") && !strings.Contains(cfg.Endpoint, "://localhost")
	default:
		srv, err := dynashardtest.NewServer(func(o *dynashardtest.Options) { o.Kind = cfg.Server })
		if err != nil {
			return nil, fmt.Errorf("backend: start embedded server: %w", err)
		}
		b.srv, b.Embedded = srv, describe(srv.Kind())
		b.Client = srv.Client(clientOptions(b.Requests))
		b.Where = fmt.Sprintf("embedded %s at %s", b.Embedded, srv.Endpoint())
	}
	return b, nil
}

// awsClient builds a client from the SDK's default configuration chain.
func awsClient(ctx context.Context, endpoint string, n *Counter) (*dynamodb.Client, string, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("backend: -aws: load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, "", errors.New("backend: -aws: no region: set AWS_REGION, or a region in the profile AWS_PROFILE names")
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, "", fmt.Errorf("backend: -aws: no AWS credentials (for SSO, run aws sso login): %w", err)
	}
	where := "AWS " + cfg.Region
	fns := []func(*dynamodb.Options){clientOptions(n)}
	if endpoint != "" {
		where += " at " + endpoint
		fns = append(fns, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	}
	return dynamodb.NewFromConfig(cfg, fns...), where, nil
}

// EndpointClient returns the client Open makes for Config.Endpoint,
// counting its requests in n if n is not nil: region $AWS_REGION (default
// us-east-1), credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN when set, else dummy ones. DynamoDB Local keeps
// separate tables for each access key and region, so a test that inspects
// what a program stored through -endpoint reads through this client. It
// fails for an endpoint that is not an http(s) URL.
func EndpointClient(endpoint string, n *Counter) (*dynamodb.Client, error) {
	// The test kit's handle on a running endpoint starts nothing and holds
	// nothing; it signs as described above.
	srv, err := dynashardtest.NewServer(func(o *dynashardtest.Options) { o.Endpoint = endpoint })
	if err != nil {
		return nil, fmt.Errorf("backend: -endpoint: %w", err)
	}
	c := srv.Client(clientOptions(n))
	if err := srv.Close(); err != nil {
		return nil, fmt.Errorf("backend: -endpoint: %w", err)
	}
	return c, nil
}

func describe(k dynashardtest.Kind) string {
	if k == dynashardtest.Dynalite {
		return "dynalite"
	}
	return "DynamoDB Local"
}

// clientOptions is what every client of the examples gets: the retry
// settings the library recommends for fan-out (retries, but no
// client-side retry quota, so one throttled scatter cannot starve every
// other request), and, if n is not nil, a transport that counts requests
// in n and keeps enough idle connections for a scatter's parallel Queries.
func clientOptions(n *Counter) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(dynashard.RetryForFanOut)
		if n != nil {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = 64
			o.HTTPClient = &http.Client{Transport: countingTransport{tr, n}}
		}
	}
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
