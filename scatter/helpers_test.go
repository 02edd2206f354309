package scatter_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

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
			so.MaxAttempts = attempts
			so.MaxBackoff = 20 * time.Millisecond
			so.RateLimiter = ratelimit.None
		})
	}
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

// dataset is a sharded table filled with random items.
type dataset struct {
	table string
	base  string
	n     int
	kind  byte
	items []map[string]types.AttributeValue
}

// newDataset creates a table (pk:S, sk:kind) and writes up to perShard
// random items under each of n shards; shard 2 is always left empty.
func newDataset(t *testing.T, s *ddbtest.Server, c *dynamodb.Client, r *rand.Rand, kind byte, n, perShard int) *dataset {
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
			sk := randomKey(r, kind)
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
func reference(t testing.TB, c *dynamodb.Client, q scatter.Query, suffixes []int) []scatter.Item {
	t.Helper()
	ctx := context.Background()
	cond := "#ref_pk = :ref_pk"
	if q.KeyCondition != "" {
		cond += " AND " + q.KeyCondition
	}
	used := map[string]bool{}
	for _, p := range placeholder.FindAllString(q.KeyCondition+" "+q.Filter, -1) {
		used[p] = true
	}
	var all []scatter.Item
	for _, suffix := range suffixes {
		names := map[string]string{"#ref_pk": q.PartitionKey}
		for k, v := range q.Names {
			if used[k] {
				names[k] = v
			}
		}
		values := map[string]types.AttributeValue{":ref_pk": sv(q.Codec.Key(q.Base, suffix))}
		maps.Copy(values, q.Values)
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(q.Table),
			KeyConditionExpression:    aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
			ScanIndexForward:          aws.Bool(!q.Descending),
		}
		if q.Index != "" {
			in.IndexName = aws.String(q.Index)
		}
		if q.Filter != "" {
			in.FilterExpression = aws.String(q.Filter)
		}
		var prev types.AttributeValue
		for p := dynamodb.NewQueryPaginator(c, in); p.HasMorePages(); {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("reference query of suffix %d: %v", suffix, err)
			}
			for _, it := range out.Items {
				if sk := it[q.SortKey]; prev != nil && sk != nil {
					c, err := keyorder.Compare(prev, sk)
					if err != nil {
						t.Fatal(err)
					}
					if q.Descending {
						c = -c
					}
					if c > 0 || (c == 0 && q.Index == "") {
						t.Fatalf("server order of suffix %d disagrees with keyorder: %v then %v", suffix, show(prev), show(sk))
					}
				}
				prev = it[q.SortKey]
				all = append(all, scatter.Item{Suffix: suffix, Attrs: it})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b scatter.Item) int {
		c := 0
		if q.SortKey != "" {
			c, _ = keyorder.Compare(a.Attrs[q.SortKey], b.Attrs[q.SortKey])
		}
		if c == 0 {
			c = a.Suffix - b.Suffix
		}
		if q.Descending {
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
func pages(t testing.TB, sc *scatter.Scatter, q scatter.Query, limit int) []scatter.Item {
	t.Helper()
	var out []scatter.Item
	var c scatter.Cursor
	for calls := 0; ; calls++ {
		items, next, err := sc.Page(context.Background(), q, limit, c)
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

var errorsIs = errors.Is
