package scatter_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/exampletest"
	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

func TestMain(m *testing.M) { exampletest.Main(m) }

// testClient returns an SDK client for endpoint with a transport of its own,
// so a test can close idle connections before looking for leaked goroutines.
func testClient(endpoint string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, *http.Transport) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	fns := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: tr}
	}}, optFns...)
	return localddb.NewClient(endpoint, fns...), tr
}

// fastRetries keeps the SDK's retries but with short backoff and no retry
// quota, the settings the package doc recommends for a fan-out.
func fastRetries(attempts int) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			dynashard.RetryForFanOut(so)
			so.MaxAttempts = attempts
			so.MaxBackoff = 20 * time.Millisecond
		})
	}
}

// unreachable is a loopback endpoint nothing listens on: a client pointed
// at it fails every request it sends, and counts it.
const unreachable = "http://127.0.0.1:1"

// requests counts the requests a client sent, by operation.
type requests struct {
	mu sync.Mutex
	m  map[string]int
}

func (r *requests) of(op string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[op]
}

func (r *requests) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.m {
		n += v
	}
	return n
}

func (r *requests) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.m)
}

// countingClient returns a real SDK client for endpoint that counts every
// request it sends (each attempt), by operation, with a Finalize
// middleware, so a test can prove that validation happens before any
// request. Operations listed in panicOn panic in the middleware instead,
// as a buggy client would, in whatever goroutine sent them.
func countingClient(endpoint string, panicOn ...string) (*dynamodb.Client, *requests) {
	n := &requests{m: map[string]int{}}
	c, _ := testClient(endpoint, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("count", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				op := awsmiddleware.GetOperationName(ctx)
				n.mu.Lock()
				n.m[op]++
				n.mu.Unlock()
				if slices.Contains(panicOn, op) {
					panic("client bug in " + op)
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
		})
	}, fastRetries(1))
	return c, n
}

// read is what a test reads: a layout, a base, and the options of what a
// call reads (how it runs is the Scatter's).
type read struct {
	l    shard.Layout
	base string
	o    scatter.Options
}

// opt is the per-call option that applies q's read options.
func (q read) opt(o *scatter.Options) {
	o.ConsistentRead, o.Descending, o.Unordered, o.PageSize = q.o.ConsistentRead, q.o.Descending, q.o.Unordered, q.o.PageSize
	o.KeyCondition, o.Filter, o.Projection = q.o.KeyCondition, q.o.Filter, q.o.Projection
	o.Names, o.Values, o.Suffixes = q.o.Names, q.o.Values, q.o.Suffixes
}

// newScatter is scatter.New, failing t on an error.
func newScatter(t testing.TB, c scatter.Client, l shard.Layout, optFns ...func(*scatter.Options)) *scatter.Scatter {
	t.Helper()
	sc, err := scatter.New(c, l, optFns...)
	if err != nil {
		t.Fatalf("scatter.New: %v", err)
	}
	return sc
}

// layout is the layout of a table keyed (pk:S, sk:kind).
func layout(table string, kind byte, strategy shard.Strategy) shard.Layout {
	return shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", SortKeyType: types.ScalarAttributeType(kind), Strategy: strategy}
}

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func nv(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }
func bv(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }

// randomKey draws a sort-key value of kind from a small domain, so that the
// same value often occurs in several shards, and from DynamoDB's extremes.
func randomKey(r *rand.Rand, kind byte) types.AttributeValue {
	switch kind {
	case 'S':
		// Mixed widths: U+FF61 (3 bytes) sorts before U+1F600 (4 bytes) in
		// UTF-8 but after it in UTF-16.
		alphabet := []string{"a", "b", "A", "0", "~", "é", "\uff61", "\U0001F600"}
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return sv(b.String())
	case 'N':
		switch r.IntN(6) {
		case 0:
			return nv([]string{"1E-130", "-1E-130", "9.9999999999999999999999999999999999999E+125",
				"-9.9999999999999999999999999999999999999E+125", "0", "12345678901234567890123456789012345678",
				"1.2345678901234567890123456789012345679", "-0.000001"}[r.IntN(8)])
		case 1:
			return nv(fmt.Sprintf("%d.%d", r.IntN(5)-2, r.IntN(10)))
		case 2:
			return nv(fmt.Sprintf("%de%d", r.IntN(19)-9, r.IntN(40)-20))
		default:
			return nv(fmt.Sprint(r.IntN(30) - 10))
		}
	default:
		bytesDomain := []byte{0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff}
		b := make([]byte, 1+r.IntN(3))
		for i := range b {
			b[i] = bytesDomain[r.IntN(len(bytesDomain))]
		}
		return bv(b)
	}
}

// dataset is a sharded table filled with random items, written without
// a layout record.
type dataset struct {
	table string
	base  string
	n     int
	kind  byte
	items []map[string]types.AttributeValue
}

// read is a read of the whole data set with strategy.
func (ds *dataset) read(strategy shard.Strategy) read {
	return read{l: layout(ds.table, ds.kind, strategy), base: ds.base}
}

// newDataset creates a table (pk:S, sk:kind) and writes up to perShard
// random items under each of n shards; shard 2 is always left empty.
func newDataset(t *testing.T, s *ddbtest.Server, c *dynamodb.Client, r *rand.Rand, kind byte, n, perShard int) *dataset {
	t.Helper()
	return newDatasetOf(t, s, c, r, kind, n, perShard, keysFor(s))
}

// keysFor returns randomKey, but without U+FF61 for dynalite. dynalite
// orders items and evaluates key conditions by UTF-8 bytes, as DynamoDB
// does, but checks an ExclusiveStartKey against a key condition's bounds
// in UTF-16 order, where U+FF61 sorts after U+1F600: it then rejects a
// resume after a key it returned itself ("The provided starting key does
// not match the range key predicate") when the key and a bound straddle
// that difference. DynamoDB Local gets the whole alphabet.
func keysFor(s *ddbtest.Server) func(*rand.Rand, byte) types.AttributeValue {
	if s.Kind != localddb.Dynalite {
		return randomKey
	}
	return func(r *rand.Rand, kind byte) types.AttributeValue {
		v := randomKey(r, kind)
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			return sv(strings.ReplaceAll(s.Value, "\uff61", "b"))
		}
		return v
	}
}

// newDatasetOf is newDataset with sort keys drawn by key.
func newDatasetOf(t *testing.T, s *ddbtest.Server, c *dynamodb.Client, r *rand.Rand, kind byte, n, perShard int,
	key func(*rand.Rand, byte) types.AttributeValue) *dataset {
	t.Helper()
	ds := &dataset{table: s.Table(t, "pk:S", "sk:"+string(kind)), base: "2014-07-09", n: n, kind: kind}
	id := 0
	for suffix := 1; suffix <= n; suffix++ {
		if suffix == 2 {
			continue
		}
		var sks []types.AttributeValue
	draw:
		for range r.IntN(perShard + 1) {
			sk := key(r, kind)
			for _, o := range sks {
				if c, _ := keyorder.Compare(sk, o); c == 0 {
					continue draw // one item per key in a shard
				}
			}
			sks = append(sks, sk)
			id++
			ds.items = append(ds.items, map[string]types.AttributeValue{
				"pk": sv(shard.Key(ds.base, suffix)),
				"sk": sk,
				"id": sv(fmt.Sprintf("i%05d", id)),
				"v":  nv(fmt.Sprint(r.IntN(100))),
			})
		}
	}
	putAll(t, c, ds.table, ds.items)
	return ds
}

// putAll writes items with BatchWriteItem, resending anything unprocessed.
func putAll(t testing.TB, c *dynamodb.Client, table string, items []map[string]types.AttributeValue) {
	t.Helper()
	ctx := context.Background()
	for len(items) > 0 {
		n := min(25, len(items))
		reqs := make([]types.WriteRequest, n)
		for i, it := range items[:n] {
			reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
		}
		items = items[n:]
		for len(reqs) > 0 {
			out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
			if err != nil {
				t.Fatalf("BatchWriteItem: %v", err)
			}
			reqs = out.UnprocessedItems[table]
		}
	}
}

var placeholder = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// reference is the model of a scatter query: query every shard to exhaustion
// with the plain SDK, concatenate, and sort stably by sort key, then suffix
// (all reversed when descending). It also checks that each shard's own order,
// as the server returns it, agrees with keyorder.
func reference(t testing.TB, c *dynamodb.Client, q read, suffixes []int) []scatter.Item {
	t.Helper()
	ctx := context.Background()
	l, o := q.l, q.o
	cond := "#ref_pk = :ref_pk"
	if o.KeyCondition != "" {
		cond += " AND " + o.KeyCondition
	}
	used := map[string]bool{}
	for _, p := range placeholder.FindAllString(o.KeyCondition+" "+o.Filter, -1) {
		used[p] = true
	}
	var all []scatter.Item
	for _, suffix := range suffixes {
		names := map[string]string{"#ref_pk": l.PartitionKey}
		for k, v := range o.Names {
			if used[k] {
				names[k] = v
			}
		}
		values := map[string]types.AttributeValue{":ref_pk": sv(l.Codec.Key(q.base, suffix))}
		maps.Copy(values, o.Values)
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(l.Table),
			KeyConditionExpression:    aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
			ScanIndexForward:          aws.Bool(!o.Descending),
		}
		if l.Index != "" {
			in.IndexName = aws.String(l.Index)
		}
		if o.Filter != "" {
			in.FilterExpression = aws.String(o.Filter)
		}
		var prev types.AttributeValue
		for p := dynamodb.NewQueryPaginator(c, in); p.HasMorePages(); {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("reference query of suffix %d: %v", suffix, err)
			}
			for _, it := range out.Items {
				if sk := it[l.SortKey]; prev != nil && sk != nil {
					c, err := keyorder.Compare(prev, sk)
					if err != nil {
						t.Fatal(err)
					}
					if o.Descending {
						c = -c
					}
					if c > 0 || (c == 0 && l.Index == "") {
						t.Fatalf("server order of suffix %d disagrees with keyorder: %v then %v", suffix, show(prev), show(sk))
					}
				}
				prev = it[l.SortKey]
				all = append(all, scatter.Item{Suffix: suffix, Attrs: it})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b scatter.Item) int {
		c := 0
		if l.SortKey != "" {
			c, _ = keyorder.Compare(a.Attrs[l.SortKey], b.Attrs[l.SortKey])
		}
		if c == 0 {
			c = a.Suffix - b.Suffix
		}
		if o.Descending {
			return -c
		}
		return c
	})
	return all
}

// ids renders items as "suffix/id sortkey" for diffs.
func ids(items []scatter.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = fmt.Sprintf("%d/%s %s", it.Suffix, show(it.Attrs["id"]), show(it.Attrs["sk"]))
	}
	return out
}

func show(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("%x", v.Value)
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("%v", v)
}

// collect drains an All sequence.
func collect(t testing.TB, seq func(func(scatter.Item, error) bool)) []scatter.Item {
	t.Helper()
	var out []scatter.Item
	for it, err := range seq {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		out = append(out, it)
	}
	return out
}

// pages reads q to the end with Page, limit items at a time.
func pages(t testing.TB, sc *scatter.Scatter, q read, limit int) []scatter.Item {
	t.Helper()
	var out []scatter.Item
	var c scatter.Cursor
	for calls := 0; ; calls++ {
		items, next, err := sc.Page(context.Background(), q.base, limit, c, q.opt)
		if err != nil {
			t.Fatalf("Page(limit %d) call %d: %v", limit, calls, err)
		}
		if len(items) > limit {
			t.Fatalf("Page(limit %d) returned %d items", limit, len(items))
		}
		out = append(out, items...)
		if next == "" {
			return out
		}
		if next == c {
			t.Fatalf("Page(limit %d) call %d: cursor did not advance", limit, calls)
		}
		c = next
		if calls > 10000 {
			t.Fatal("Page never ends")
		}
	}
}

func suffixRange(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i + 1
	}
	return s
}
