package dynashardtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/localddb"
)

// Kind selects the server.
type Kind string

// The servers NewServer can start.
const (
	// DynamoDBLocal is AWS's DynamoDB Local 1.25.1, run by java (17 or
	// later): faithful item sizes, transactions and TTL; it never
	// throttles. It is the default.
	DynamoDBLocal Kind = "ddblocal" // default
	// Dynalite is dynalite 4.0.0, run by node (20 or later): quicker to
	// start and lighter; it counts sizes in UTF-16, has no transactions or
	// TTL, and returns small BatchGetItem pages.
	Dynalite Kind = "dynalite"
)

// localKinds maps each Kind to the server localddb starts; a Kind missing
// here is rejected.
var localKinds = map[Kind]localddb.Kind{
	DynamoDBLocal: localddb.DynamoDBLocal,
	Dynalite:      localddb.Dynalite,
}

// Options configures NewServer. The zero value starts DynamoDB Local.
type Options struct {
	// Kind is the server to start. Zero means DynamoDBLocal. With
	// Endpoint set, nothing is started and Kind only records what runs
	// there, for Server.Kind.
	Kind Kind
	// Endpoint, if set, uses an already running DynamoDB-compatible
	// server (or real DynamoDB) instead of starting one. It is an http or
	// https URL such as "http://127.0.0.1:8000" or
	// "https://dynamodb.eu-west-1.amazonaws.com". Zero means start a
	// server of Kind.
	Endpoint string
	// Proxy, if set, puts a faultproxy in front of the server, configured
	// by *Proxy: its capacity model (faultproxy.Partitioned for DynamoDB's
	// partitions, faultproxy.PerKey) and its faults. Each handle gets a
	// proxy of its own, with its own buckets and counters; Endpoint and
	// Client go through it, Proxy returns it, and Close stops it; another
	// handle without Proxy reaches the same server, and its tables,
	// directly. The partition model takes a table's throughput from the
	// CreateTable that passes through (CreateTable and Client send theirs
	// through the proxy), else from the proxy's own DescribeTable. The
	// proxy forwards requests signed for its own address, so a target
	// given by Endpoint must not check signatures: a local server, not
	// real DynamoDB. Nil (the default) means no proxy.
	Proxy *faultproxy.Config
}

// localRegion and localCredentials are what clients of a started server
// sign with. DynamoDB Local keeps separate tables per access key ID and
// region, so every client of one server must agree on both; they are the
// dummy ones a handle on an Endpoint uses when the environment has none,
// so both kinds of handle on one local server see the same tables.
const localRegion = "us-east-1"

var localCredentials = aws.Credentials{AccessKeyID: "dynashard", SecretAccessKey: "dynashard", Source: "dynashardtest"}

// Server is a handle on a DynamoDB-compatible server: one NewServer or
// Start started or joined, or one given by Options.Endpoint, and with
// Options.Proxy a fault proxy of its own in front of it. Handles on the
// same Kind share one server process, and so its tables, until the last
// handle is closed. Its methods are safe for concurrent use. The zero
// Server has no endpoint and is not usable; get one from NewServer or
// Start.
type Server struct {
	kind     Kind
	endpoint string            // the proxy's URL when there is one
	sh       *shared           // nil when Options.Endpoint was given
	proxy    *faultproxy.Proxy // nil without Options.Proxy

	clientOnce sync.Once
	client     *dynamodb.Client // for CreateTable, made on first use
	closeOnce  sync.Once
	closeErr   error
}

// NewServer returns a handle on a server of Options.Kind, starting the
// server (and, the first time on a machine, installing it) only if no handle
// of that Kind is open in the process; otherwise it shares the running one.
// With Options.Endpoint it starts nothing and returns a handle on that
// endpoint. With Options.Proxy it also starts the handle's proxy in front
// of the server. The caller must Close the handle.
//
// It fails, without starting anything, for an unknown Kind or an Endpoint
// that is not an http(s) URL (errors matching dynashard.ErrInvalid), and
// fails when java (for DynamoDB Local) or node (for dynalite) is not on
// PATH, naming what to install. An invalid Options.Proxy fails it too
// (matching dynashard.ErrInvalid and naming the field), after the handle
// on the server was had and before it is released again. Safe for
// concurrent use: concurrent first calls start one server between them.
func NewServer(optFns ...func(*Options)) (*Server, error) {
	var o Options
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	if o.Kind == "" {
		o.Kind = DynamoDBLocal
	}
	if _, ok := localKinds[o.Kind]; !ok {
		return nil, fmt.Errorf("dynashardtest: Options.Kind %q: want %q or %q: %w", o.Kind, DynamoDBLocal, Dynalite, dynashard.ErrInvalid)
	}
	s := &Server{kind: o.Kind, endpoint: o.Endpoint}
	if o.Endpoint != "" {
		if err := checkEndpoint(o.Endpoint); err != nil {
			return nil, err
		}
	} else {
		sh, err := acquire(o.Kind)
		if err != nil {
			return nil, err
		}
		s.sh, s.endpoint = sh, sh.srv.Endpoint
	}
	if o.Proxy != nil {
		p, err := faultproxy.New(s.endpoint, *o.Proxy)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("dynashardtest: Options.Proxy: %w", err)
		}
		s.proxy, s.endpoint = p, p.URL()
	}
	return s, nil
}

func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("dynashardtest: Options.Endpoint %q: want an http(s) URL such as http://127.0.0.1:8000: %w", endpoint, dynashard.ErrInvalid)
	}
	return nil
}

// Start is NewServer for a test: it fails tb (tb.Fatal) if the server
// cannot be had, and closes the handle when tb and its subtests end.
//
// The server stops when its last handle closes, so tests that each call
// Start in turn each start one; a handle held open in TestMain keeps one
// server for the whole package (see the package documentation).
func Start(tb testing.TB, optFns ...func(*Options)) *Server {
	tb.Helper()
	s, err := NewServer(optFns...)
	if err != nil {
		tb.Fatal(err)
		return nil // only reached with a testing.TB whose Fatal returns
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// Endpoint returns the server's URL, such as "http://127.0.0.1:41234", or
// Options.Endpoint as given; with Options.Proxy, the proxy's URL instead.
func (s *Server) Endpoint() string { return s.endpoint }

// Proxy returns the handle's proxy, started by Options.Proxy, or nil
// without one. Its Stats, ResetStats and Set are the test's to use (Set
// changes the model or the faults mid-test); Close the Server, not the
// proxy.
func (s *Server) Proxy() *faultproxy.Proxy { return s.proxy }

// Kind returns the server's Kind: the one started, or Options.Kind
// (DynamoDBLocal by default) for an Endpoint.
func (s *Server) Kind() Kind { return s.kind }

// Client returns a new SDK client for the server, then applies optFns.
// It signs with region us-east-1 and static dummy credentials, sets
// BaseEndpoint, and retries with retry.NewStandard(dynashard.RetryForFanOut).
// For an Options.Endpoint, the region and credentials come from AWS_REGION,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN when those
// are set, so real DynamoDB can be used.
//
// With Options.Proxy the client talks to the proxy, and its retryer
// retries the throttling the proxy answers with (five attempts, backing
// off): code under test sees ProvisionedThroughputExceededException only
// once they are spent. A test that wants the error from the first refusal
// makes one attempt: Client(func(o *dynamodb.Options) {
// o.RetryMaxAttempts = 1 }).
func (s *Server) Client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	fns := make([]func(*dynamodb.Options), 0, 1+len(optFns))
	fns = append(fns, func(o *dynamodb.Options) { o.Retryer = retry.NewStandard(dynashard.RetryForFanOut) })
	fns = append(fns, optFns...)
	if s.sh == nil {
		return localddb.NewClient(s.endpoint, fns...)
	}
	return dynamodb.New(dynamodb.Options{
		Region:       localRegion,
		BaseEndpoint: aws.String(s.endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return localCredentials, nil
		}),
	}, fns...)
}

// Close releases the handle: it stops the handle's proxy, if any, then
// closing the last handle on a started server stops the server, waits for
// it to exit and discards its tables; a handle on an Options.Endpoint
// stops nothing. Close is idempotent: a second call returns the first
// call's error and leaves other handles alone.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.proxy != nil {
			if err := s.proxy.Close(); err != nil {
				errs = append(errs, fmt.Errorf("dynashardtest: stop proxy: %w", err))
			}
		}
		if s.sh != nil {
			errs = append(errs, release(s.kind, s.sh))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
