package faultproxy

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// fixture is a table on a real server with a proxy in front of it.
type fixture struct {
	t      *testing.T
	s      *ddbtest.Server
	p      *Proxy
	table  string
	direct *dynamodb.Client // bypasses the proxy
}

// newFixture creates a table with key pk:S, sk:N and a proxy whose capacity
// clock is frozen, so that bucket balances depend only on the requests.
func newFixture(t *testing.T, s *ddbtest.Server, cfg Config) *fixture {
	t.Helper()
	f := &fixture{t: t, s: s, table: s.Table(t, "pk:S", "sk:N"), direct: s.Client()}
	f.p = newProxy(t, s.Endpoint, cfg)
	return f
}

func newProxy(t *testing.T, endpoint string, cfg Config) *Proxy {
	t.Helper()
	p, err := New(endpoint, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	frozen := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.mu.Lock()
	p.now = func() time.Time { return frozen }
	p.mu.Unlock()
	return p
}

// noRetry returns an SDK client through the proxy that makes one attempt.
func (f *fixture) noRetry() *dynamodb.Client {
	return localddb.NewClient(f.p.URL(), f.checkCRC, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
}

// checkCRC makes the client fail the test on any complete response whose
// X-Amz-Crc32 does not match its body: the SDK itself only logs a mismatch.
func (f *fixture) checkCRC(o *dynamodb.Options) {
	tr := &http.Transport{}
	f.t.Cleanup(tr.CloseIdleConnections)
	o.HTTPClient = crcChecker{t: f.t, next: &http.Client{Transport: tr}}
}

type crcChecker struct {
	t    *testing.T
	next *http.Client
}

func (c crcChecker) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		// A truncated response: hand the client what arrived, then the
		// error, as the transport would.
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), iotest.ErrReader(err)))
		return resp, nil
	}
	got := resp.Header.Get("X-Amz-Crc32")
	if want := strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10); got != want {
		c.t.Errorf("X-Amz-Crc32 of %s: got %q, want %q", body, got, want)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// retrying returns an SDK client through the proxy with the standard
// retryer, ten attempts, a 1 ms backoff and no retry quota, so that
// deliberate faults neither slow the test nor drain the quota.
func (f *fixture) retrying() *dynamodb.Client {
	return localddb.NewClient(f.p.URL(), f.checkCRC, func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			dynashard.RetryForFanOut(so)
			so.MaxAttempts = 10
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) {
				return time.Millisecond, nil
			})
		})
	})
}

func item(pk string, sk, payload int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberN{Value: strconv.Itoa(sk)},
		"v":  &types.AttributeValueMemberS{Value: strings.Repeat("x", payload)},
	}
}

func key(pk string, sk int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberN{Value: strconv.Itoa(sk)},
	}
}

func size(t *testing.T, it map[string]types.AttributeValue) int {
	t.Helper()
	n, err := ddbsize.ItemSize(it)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fixture) put(c *dynamodb.Client, it map[string]types.AttributeValue) error {
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: it})
	return err
}

// mustPut writes directly to the server.
func (f *fixture) mustPut(it map[string]types.AttributeValue) {
	f.t.Helper()
	if err := f.put(f.direct, it); err != nil {
		f.t.Fatal(err)
	}
}

// exists asks the server directly, with a consistent read.
func (f *fixture) exists(pk string, sk int) bool {
	f.t.Helper()
	out, err := f.direct.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.table), Key: key(pk, sk), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.Item != nil
}

func (f *fixture) key(pk string) Key { return Key{Table: f.table, PK: pk} }

// attrString returns the S or N value of an attribute.
func attrString(av types.AttributeValue) string {
	s, _ := keyString(av)
	return s
}
