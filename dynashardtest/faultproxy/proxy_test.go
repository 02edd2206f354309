package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// Reference model of DynamoDB's capacity units, written independently of
// the proxy's.
func modelWCU(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

func modelRCU(size int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(size)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// modelAdmitted is how many requests of cost units a full bucket of depth
// admits before refusing one (admission needs a positive balance).
func modelAdmitted(depth, units float64) int {
	n := 0
	for b := depth; b > 0; b -= units {
		n++
	}
	return n
}

func isThrottle(err error) bool {
	var pt *types.ProvisionedThroughputExceededException
	return errors.As(err, &pt)
}

func TestThrottlePerKey(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		cfg := Config{WCU: 2, Burst: 5 * time.Second}
		f := newFixture(t, s, cfg)
		c := f.noRetry()
		hot := func(i int) map[string]types.AttributeValue { return item("hot", i, 1500) }
		units := modelWCU(size(t, hot(0)))
		n := modelAdmitted(cfg.WCU*cfg.Burst.Seconds(), units)
		for i := range n {
			if err := f.put(c, hot(i)); err != nil {
				t.Fatalf("put %d of %d within budget: %v", i, n, err)
			}
		}
		err := f.put(c, hot(n))
		if !isThrottle(err) {
			t.Fatalf("put over budget: got %v, want *types.ProvisionedThroughputExceededException", err)
		}
		if f.exists("hot", n) {
			t.Errorf("throttled put was applied")
		}
		if err := f.put(c, item("cold", 0, 1500)); err != nil {
			t.Errorf("put on another key while hot is throttled: %v", err)
		}

		st := f.p.Stats()
		if got, want := st.Keys[f.key("hot")], (Counters{Requests: n + 1, Forwarded: n, Throttled: 1, WCU: float64(n) * units}); got != want {
			t.Errorf("hot key counters: got %+v, want %+v", got, want)
		}
		if got := st.Keys[f.key("cold")]; got.Throttled != 0 || got.Forwarded != 1 {
			t.Errorf("cold key counters: got %+v, want 1 forwarded, 0 throttled", got)
		}
		if got, want := st.Ops["PutItem"].Throttled, 1; got != want {
			t.Errorf("PutItem throttled: got %d, want %d", got, want)
		}
	})
}

func TestThrottleWireFormat(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		f := newFixture(t, s, Config{ThrottleRate: 1})
		req, err := http.NewRequest(http.MethodPost, f.p.URL(), bytes.NewReader([]byte(`{"TableName":"x"}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.DescribeTable")
		req.Header.Set("Content-Type", jsonContentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		http.DefaultClient.CloseIdleConnections()
		if err != nil {
			t.Fatal(err)
		}
		want := `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`
		if string(body) != want {
			t.Errorf("body: got %s, want %s", body, want)
		}
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status: got %d, want 400", resp.StatusCode)
		}
		if got := resp.Header.Get("Content-Type"); got != "application/x-amz-json-1.0" {
			t.Errorf("Content-Type: got %q, want application/x-amz-json-1.0", got)
		}
		if got, want := resp.Header.Get("X-Amz-Crc32"), strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10); got != want {
			t.Errorf("X-Amz-Crc32: got %q, want %q", got, want)
		}
	})
}

func TestReadCharges(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		f := newFixture(t, s, Config{})
		c := f.noRetry()
		ctx := context.Background()
		sizes := []int{10, 5000, 9000}
		var total int
		for i, n := range sizes {
			it := item("q", i, n)
			total += size(t, it)
			f.mustPut(it)
		}
		for _, consistent := range []bool{false, true} {
			t.Run(fmt.Sprint("consistent=", consistent), func(t *testing.T) {
				f.p.ResetStats()
				var want float64
				for i, n := range sizes {
					if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{
						TableName: aws.String(f.table), Key: key("q", i), ConsistentRead: aws.Bool(consistent),
					}); err != nil {
						t.Fatal(err)
					}
					want += modelRCU(size(t, item("q", i, n)), consistent)
				}
				// A missing item still costs the minimum.
				if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{
					TableName: aws.String(f.table), Key: key("q", 99), ConsistentRead: aws.Bool(consistent),
				}); err != nil {
					t.Fatal(err)
				}
				want += modelRCU(0, consistent)
				// A Query is charged on the sum of its items' sizes.
				if _, err := c.Query(ctx, &dynamodb.QueryInput{
					TableName:                 aws.String(f.table),
					KeyConditionExpression:    aws.String("#p = :p AND sk >= :s"),
					ExpressionAttributeNames:  map[string]string{"#p": "pk"},
					ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "q"}, ":s": &types.AttributeValueMemberN{Value: "0"}},
					ConsistentRead:            aws.Bool(consistent),
				}); err != nil {
					t.Fatal(err)
				}
				want += modelRCU(total, consistent)
				if got := f.p.Stats().Keys[f.key("q")].RCU; got != want {
					t.Errorf("RCU charged to key: got %v, want %v", got, want)
				}
			})
		}
	})
}

func TestReadThrottle(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		cfg := Config{RCU: 1, Burst: 2 * time.Second}
		f := newFixture(t, s, cfg)
		c := f.noRetry()
		ctx := context.Background()
		big := item("hot", 1, 10000)
		f.mustPut(big)
		f.mustPut(item("cold", 1, 10))
		units := modelRCU(size(t, big), true)
		n := modelAdmitted(cfg.RCU*cfg.Burst.Seconds(), units)
		get := func(pk string) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.table), Key: key(pk, 1), ConsistentRead: aws.Bool(true)})
			return err
		}
		for i := range n {
			if err := get("hot"); err != nil {
				t.Fatalf("read %d of %d within budget: %v", i, n, err)
			}
		}
		if err := get("hot"); !isThrottle(err) {
			t.Errorf("GetItem over budget: got %v, want *types.ProvisionedThroughputExceededException", err)
		}
		_, err := c.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(f.table),
			KeyConditions:             map[string]types.Condition{"pk": {ComparisonOperator: types.ComparisonOperatorEq, AttributeValueList: []types.AttributeValue{&types.AttributeValueMemberS{Value: "hot"}}}},
			ConsistentRead:            aws.Bool(true),
			ExpressionAttributeValues: nil,
		})
		if !isThrottle(err) {
			t.Errorf("Query (KeyConditions) over budget: got %v, want *types.ProvisionedThroughputExceededException", err)
		}
		if err := get("cold"); err != nil {
			t.Errorf("read on another key: %v", err)
		}
		if got, want := f.p.Stats().Keys[f.key("hot")].RCU, float64(n)*units; got != want {
			t.Errorf("RCU charged to hot: got %v, want %v", got, want)
		}
	})
}

// writeKeys returns the (pk, sk) of the put requests in reqs.
func writeKeys(t *testing.T, reqs []types.WriteRequest) []string {
	t.Helper()
	var out []string
	for _, r := range reqs {
		if r.PutRequest == nil {
			t.Fatalf("unprocessed write %+v: want a PutRequest", r)
		}
		out = append(out, attrString(r.PutRequest.Item["pk"])+"/"+attrString(r.PutRequest.Item["sk"]))
	}
	return out
}

func TestBatchWriteUnprocessedRate(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		f := newFixture(t, s, Config{UnprocessedRate: 0.5, Seed: 1})
		c := f.noRetry()
		var reqs []types.WriteRequest
		for i := range 25 {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item(fmt.Sprint("k", i), i, 100)}})
		}
		out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
			RequestItems:           map[string][]types.WriteRequest{f.table: reqs},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			t.Fatal(err)
		}
		un := writeKeys(t, out.UnprocessedItems[f.table])
		if len(un) == 0 || len(un) == len(reqs) {
			t.Fatalf("seed drew %d of %d unprocessed; the test needs a mix", len(un), len(reqs))
		}
		if got, want := f.p.Stats().Ops["BatchWriteItem"].Unprocessed, len(un); got != want {
			t.Errorf("Unprocessed counter: got %d, want %d", got, want)
		}
		for i, r := range reqs {
			id := fmt.Sprint("k", i, "/", i)
			if got, want := f.exists(fmt.Sprint("k", i), i), !slices.Contains(un, id); got != want {
				t.Errorf("%s applied: got %v, want %v", id, got, want)
			}
			if slices.Contains(un, id) {
				j := slices.Index(un, id)
				if diff := cmp.Diff(attrString(r.PutRequest.Item["v"]), attrString(out.UnprocessedItems[f.table][j].PutRequest.Item["v"])); diff != "" {
					t.Errorf("unprocessed %s differs from the request (-want +got):\n%s", id, diff)
				}
			}
		}

		// Everything unprocessed: nothing reaches the server.
		if err := f.p.Set(Config{UnprocessedRate: 1}); err != nil {
			t.Fatal(err)
		}
		f.p.ResetStats()
		var again []types.WriteRequest
		for i := range 25 {
			again = append(again, types.WriteRequest{PutRequest: &types.PutRequest{Item: item("all", i, 10)}})
		}
		out, err = c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
			RequestItems:           map[string][]types.WriteRequest{f.table: again},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(out.UnprocessedItems[f.table]), len(again); got != want {
			t.Errorf("all unprocessed: got %d, want %d", got, want)
		}
		if len(out.ConsumedCapacity) != 1 || aws.ToFloat64(out.ConsumedCapacity[0].CapacityUnits) != 0 {
			t.Errorf("ConsumedCapacity of an unforwarded batch: got %+v, want one entry with 0 units", out.ConsumedCapacity)
		}
		if got := f.p.Stats().Ops["BatchWriteItem"].Forwarded; got != 0 {
			t.Errorf("forwarded: got %d, want 0", got)
		}
		for i := range again {
			if f.exists("all", i) {
				t.Errorf("all/%d applied, want not", i)
			}
		}
	})
}

func TestBatchWriteCapacity(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		cfg := Config{WCU: 1, Burst: 3 * time.Second}
		f := newFixture(t, s, cfg)
		c := f.noRetry()
		var reqs []types.WriteRequest
		for i := range 6 {
			reqs = append(reqs,
				types.WriteRequest{PutRequest: &types.PutRequest{Item: item("hot", i, 10)}},
				types.WriteRequest{PutRequest: &types.PutRequest{Item: item(fmt.Sprint("cold", i), i, 10)}})
		}
		n := modelAdmitted(cfg.WCU*cfg.Burst.Seconds(), modelWCU(size(t, item("hot", 0, 10))))
		out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{f.table: reqs},
		})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := n; i < 6; i++ {
			want = append(want, fmt.Sprint("hot/", i))
		}
		if diff := cmp.Diff(want, writeKeys(t, out.UnprocessedItems[f.table])); diff != "" {
			t.Errorf("unprocessed (-want +got):\n%s", diff)
		}
		for i := range 6 {
			if got, want := f.exists("hot", i), i < n; got != want {
				t.Errorf("hot/%d applied: got %v, want %v", i, got, want)
			}
			if !f.exists(fmt.Sprint("cold", i), i) {
				t.Errorf("cold%d/%d not applied", i, i)
			}
		}
		if got := f.p.Stats().Keys[f.key("hot")]; got.Unprocessed != 6-n || got.Throttled != 6-n {
			t.Errorf("hot counters: got %+v, want %d unprocessed and throttled", got, 6-n)
		}

		// A batch that only touches the exhausted key fails as a whole,
		// as DynamoDB does when nothing in a batch can be processed.
		_, err = c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{f.table: {{PutRequest: &types.PutRequest{Item: item("hot", 100, 10)}}}},
		})
		if !isThrottle(err) {
			t.Errorf("batch on an exhausted key: got %v, want *types.ProvisionedThroughputExceededException", err)
		}
		if f.exists("hot", 100) {
			t.Errorf("throttled batch was applied")
		}
	})
}

func TestBatchGetUnprocessedKeys(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		f := newFixture(t, s, Config{UnprocessedRate: 0.5, Seed: 2})
		c := f.noRetry()
		// Ten 390 KB items, even with half of them taken out by the
		// proxy, exceed what dynalite returns in one response, so its own
		// UnprocessedKeys get merged with the proxy's.
		var keys []map[string]types.AttributeValue
		var want []string
		for i := range 20 {
			payload := 1 << 10
			if i < 10 {
				payload = 390 << 10
			}
			it := item(fmt.Sprint("g", i), i, 10)
			it["w"] = &types.AttributeValueMemberS{Value: strings.Repeat("w", payload)}
			f.mustPut(it)
			keys = append(keys, key(fmt.Sprint("g", i), i))
			want = append(want, fmt.Sprint("g", i, "/", i))
		}
		out, err := c.BatchGetItem(context.Background(), &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{f.table: {
				Keys:                     keys,
				ProjectionExpression:     aws.String("#p, sk, w"),
				ExpressionAttributeNames: map[string]string{"#p": "pk"},
				ConsistentRead:           aws.Bool(true),
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var got, un []string
		for _, it := range out.Responses[f.table] {
			if _, ok := it["v"]; ok {
				t.Errorf("projection lost: item %v has v", it["pk"])
			}
			if _, ok := it["w"]; !ok {
				t.Errorf("item %v: projected attribute w missing", it["pk"])
			}
			got = append(got, attrString(it["pk"])+"/"+attrString(it["sk"]))
		}
		ka := out.UnprocessedKeys[f.table]
		for _, k := range ka.Keys {
			un = append(un, attrString(k["pk"])+"/"+attrString(k["sk"]))
		}
		if aws.ToString(ka.ProjectionExpression) != "#p, sk, w" || !aws.ToBool(ka.ConsistentRead) {
			t.Errorf("UnprocessedKeys lost the request's settings: %+v", ka)
		}
		proxyUn := f.p.Stats().Ops["BatchGetItem"].Unprocessed
		if proxyUn == 0 || proxyUn == len(keys) {
			t.Fatalf("seed drew %d of %d unprocessed; the test needs a mix", proxyUn, len(keys))
		}
		if s.Kind == localddb.Dynalite && len(un) <= proxyUn {
			t.Errorf("dynalite: got %d unprocessed keys, want more than the proxy's %d", len(un), proxyUn)
		}
		all := append(slices.Clone(got), un...)
		slices.Sort(all)
		slices.Sort(want)
		if diff := cmp.Diff(want, all); diff != "" {
			t.Errorf("returned ∪ unprocessed != requested, or overlapping (-want +got):\n%s", diff)
		}
	})
}

func TestInternalServerError(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		for _, tc := range []struct {
			name        string
			cfg         Config
			wantApplied bool
		}{
			{"before", Config{ErrorRate: 1}, false},
			{"after", Config{ErrorAfterRate: 1}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := newFixture(t, s, tc.cfg)
				err := f.put(f.noRetry(), item("e", 1, 10))
				var ise *types.InternalServerError
				if !errors.As(err, &ise) {
					t.Fatalf("got %v, want *types.InternalServerError", err)
				}
				var re *smithyhttp.ResponseError
				if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusInternalServerError {
					t.Errorf("got %v, want HTTP 500", err)
				}
				if got := f.exists("e", 1); got != tc.wantApplied {
					t.Errorf("applied: got %v, want %v", got, tc.wantApplied)
				}
			})
		}
		t.Run("retried", func(t *testing.T) {
			f := newFixture(t, s, Config{ErrorRate: 0.4, ErrorAfterRate: 0.2, Seed: 3})
			c := f.retrying()
			for i := range 20 {
				if err := f.put(c, item("r", i, 10)); err != nil {
					t.Fatalf("put %d with retries: %v", i, err)
				}
			}
			st := f.p.Stats().Ops["PutItem"]
			if st.Errors == 0 || st.ErrorsAfter == 0 {
				t.Fatalf("seed injected %d errors before and %d after; the test needs both", st.Errors, st.ErrorsAfter)
			}
			for i := range 20 {
				if !f.exists("r", i) {
					t.Errorf("r/%d missing", i)
				}
			}
		})
	})
}

func TestConnectionReset(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		for _, tc := range []struct {
			name        string
			cfg         Config
			wantApplied bool
		}{
			{"before", Config{ResetBeforeRate: 1}, false},
			{"after", Config{ResetAfterRate: 1}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := newFixture(t, s, tc.cfg)
				err := f.put(f.noRetry(), item("x", 1, 10))
				var se *smithyhttp.RequestSendError
				if !errors.As(err, &se) {
					t.Fatalf("got %v, want *smithyhttp.RequestSendError", err)
				}
				if got := f.exists("x", 1); got != tc.wantApplied {
					t.Errorf("applied: got %v, want %v", got, tc.wantApplied)
				}
				st := f.p.Stats().Ops["PutItem"]
				if got, want := st.Forwarded, map[bool]int{false: 0, true: 1}[tc.wantApplied]; got != want {
					t.Errorf("forwarded: got %d, want %d", got, want)
				}
			})
		}
		t.Run("retried", func(t *testing.T) {
			f := newFixture(t, s, Config{ResetBeforeRate: 0.3, ResetAfterRate: 0.3, Seed: 4})
			c := f.retrying()
			for i := range 20 {
				if err := f.put(c, item("r", i, 10)); err != nil {
					t.Fatalf("put %d with retries: %v", i, err)
				}
			}
			st := f.p.Stats().Ops["PutItem"]
			if st.ResetsBefore == 0 || st.ResetsAfter == 0 {
				t.Fatalf("seed injected %d resets before and %d after; the test needs both", st.ResetsBefore, st.ResetsAfter)
			}
		})
	})
}

func TestTruncatedBody(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		f := newFixture(t, s, Config{TruncateRate: 1, Ops: []string{"GetItem", "Query", "BatchGetItem"}})
		want := item("t", 1, 3000)
		f.mustPut(want)
		ctx := context.Background()
		get := func(c *dynamodb.Client) (map[string]types.AttributeValue, error) {
			out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.table), Key: key("t", 1)})
			if err != nil {
				return nil, err
			}
			return out.Item, nil
		}
		query := func(c *dynamodb.Client) (map[string]types.AttributeValue, error) {
			out, err := c.Query(ctx, &dynamodb.QueryInput{
				TableName:                 aws.String(f.table),
				KeyConditionExpression:    aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "t"}},
			})
			if err != nil || len(out.Items) != 1 {
				return nil, err
			}
			return out.Items[0], nil
		}
		batchGet := func(c *dynamodb.Client) (map[string]types.AttributeValue, error) {
			out, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
				RequestItems: map[string]types.KeysAndAttributes{f.table: {Keys: []map[string]types.AttributeValue{key("t", 1)}}},
			})
			if err != nil || len(out.Responses[f.table]) != 1 {
				return nil, err
			}
			return out.Responses[f.table][0], nil
		}
		for name, read := range map[string]func(*dynamodb.Client) (map[string]types.AttributeValue, error){
			"GetItem": get, "Query": query, "BatchGetItem": batchGet,
		} {
			t.Run(name, func(t *testing.T) {
				if err := f.p.Set(Config{TruncateRate: 1, Ops: []string{name}}); err != nil {
					t.Fatal(err)
				}
				_, err := read(f.noRetry())
				var de *smithy.DeserializationError
				if !errors.As(err, &de) {
					t.Errorf("without retries: got %v, want *smithy.DeserializationError", err)
				}
				if err := f.p.Set(Config{TruncateRate: 0.5, Ops: []string{name}, Seed: 5}); err != nil {
					t.Fatal(err)
				}
				f.p.ResetStats()
				c := f.retrying()
				for i := range 6 {
					got, err := read(c)
					if err != nil {
						t.Fatalf("read %d with retries: %v", i, err)
					}
					if diff := cmp.Diff(attrString(want["v"]), attrString(got["v"])); diff != "" {
						t.Fatalf("read %d (-want +got):\n%s", i, diff)
					}
				}
				if f.p.Stats().Ops[name].Truncated == 0 {
					t.Fatalf("seed truncated nothing; the test needs some")
				}
			})
		}
	})
}

func TestLatencyOnOneKey(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		cfg := Config{Latency: 2 * time.Millisecond, Jitter: 3 * time.Millisecond, Keys: []string{"hot"}, Seed: 6}
		f := newFixture(t, s, cfg)
		c := f.noRetry()
		const n = 5
		for i := range n {
			for _, pk := range []string{"hot", "cold"} {
				if err := f.put(c, item(pk, i, 10)); err != nil {
					t.Fatal(err)
				}
			}
		}
		st := f.p.Stats()
		hot, cold := st.Keys[f.key("hot")], st.Keys[f.key("cold")]
		if hot.Delayed != n || hot.Delay < n*cfg.Latency || hot.Delay >= n*(cfg.Latency+cfg.Jitter) {
			t.Errorf("hot: got %d delays totalling %v, want %d in [%v, %v)", hot.Delayed, hot.Delay, n, n*cfg.Latency, n*(cfg.Latency+cfg.Jitter))
		}
		if cold.Delayed != 0 || cold.Delay != 0 {
			t.Errorf("cold: got %d delays totalling %v, want none", cold.Delayed, cold.Delay)
		}
		if got := st.Ops["PutItem"]; got.Delayed != n || got.Delay != hot.Delay {
			t.Errorf("PutItem: got %d delays totalling %v, want %d totalling %v", got.Delayed, got.Delay, n, hot.Delay)
		}
	})
}

func TestOpsRestrictFaults(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		f := newFixture(t, s, Config{ErrorRate: 1, Ops: []string{"GetItem"}})
		c := f.noRetry()
		if err := f.put(c, item("o", 1, 10)); err != nil {
			t.Errorf("PutItem (not selected): %v", err)
		}
		_, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.table), Key: key("o", 1)})
		var ise *types.InternalServerError
		if !errors.As(err, &ise) {
			t.Errorf("GetItem (selected): got %v, want *types.InternalServerError", err)
		}
	})
}

// TestSeedDeterminism runs one sequence of requests through two proxies with
// the same seed and expects the same faults.
func TestSeedDeterminism(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		cfg := Config{UnprocessedRate: 0.3, ErrorRate: 0.2, ThrottleRate: 0.1, Jitter: time.Millisecond, Seed: 7}
		f := newFixture(t, s, cfg)
		run := func(p *Proxy) Stats {
			c := localddb.NewClient(p.URL(), f.checkCRC, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
			for r := range 20 {
				var reqs []types.WriteRequest
				for i := range 10 {
					reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item(fmt.Sprint("d", i), r, 10)}})
				}
				_, _ = c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
					RequestItems: map[string][]types.WriteRequest{f.table: reqs},
				})
			}
			return p.Stats()
		}
		a := run(f.p)
		b := run(newProxy(t, s.Endpoint, cfg))
		if a.Total.Unprocessed == 0 || a.Total.Errors == 0 {
			t.Fatalf("seed drew %+v; the test needs unprocessed items and errors", a.Total)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("same seed, different faults (-first +second):\n%s", diff)
		}
	})
}

func TestQueryOnGlobalIndexChargesIndexKey(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		in, err := ddbtest.TableInput("pk:S", "sk:N")
		if err != nil {
			t.Fatal(err)
		}
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS})
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}}
		table := s.CreateTable(t, in)
		p := newProxy(t, s.Endpoint, Config{})
		c := localddb.NewClient(p.URL(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		it := item("p", 1, 10)
		it["g"] = &types.AttributeValueMemberS{Value: "gv"}
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Query(context.Background(), &dynamodb.QueryInput{
			TableName: aws.String(table), IndexName: aws.String("byG"),
			KeyConditionExpression:    aws.String("g = :g"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: "gv"}},
		}); err != nil {
			t.Fatal(err)
		}
		st := p.Stats()
		if got := st.Keys[Key{Table: table, Index: "byG", PK: "gv"}].Requests; got != 1 {
			t.Errorf("index key requests: got %d, want 1 (keys %v)", got, st.Keys)
		}
		if got := st.Keys[Key{Table: table, PK: "p"}].Requests; got != 1 {
			t.Errorf("table key requests: got %d, want 1 (keys %v)", got, st.Keys)
		}
	})
}

// TestCloseAbortsAndLeavesNoGoroutine closes the proxy while a request sits
// in a long injected delay.
func TestCloseAbortsAndLeavesNoGoroutine(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		table := s.Table(t, "pk:S", "sk:N")
		ignore := goleak.IgnoreCurrent()
		p, err := New(s.Endpoint, Config{Latency: time.Hour, Ops: []string{"GetItem"}})
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{}
		c := localddb.NewClient(p.URL(), func(o *dynamodb.Options) {
			o.RetryMaxAttempts = 1
			o.HTTPClient = &http.Client{Transport: tr}
		})
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("c", 1, 10)}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("c", 1)})
			done <- err
		}()
		for p.Stats().Ops["GetItem"].Delayed == 0 {
			time.Sleep(time.Millisecond)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err == nil {
			t.Errorf("request in flight at Close: got nil error, want one")
		}
		if err := p.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		tr.CloseIdleConnections()
		goleak.VerifyNone(t, ignore)
	})
}

func TestConfigValidation(t *testing.T) {
	bad := []Config{
		{UnprocessedRate: -0.1}, {ThrottleRate: 1.5}, {ErrorRate: math.NaN()}, {ErrorAfterRate: 2},
		{ResetBeforeRate: -1}, {ResetAfterRate: 1.01}, {TruncateRate: math.Inf(1)},
		{WCU: -1}, {RCU: math.Inf(1)}, {WCU: math.NaN()},
		{Burst: -time.Second}, {Latency: -1}, {Jitter: -1},
	}
	for _, cfg := range bad {
		if p, err := New("http://127.0.0.1:1", cfg); !errors.Is(err, dynashard.ErrInvalid) {
			if p != nil {
				p.Close()
			}
			t.Errorf("New(%+v): got %v, want an error matching dynashard.ErrInvalid", cfg, err)
		}
	}
	for _, target := range []string{"", "127.0.0.1:8000", "ftp://x", "http://", "://"} {
		if p, err := New(target, Config{}); !errors.Is(err, dynashard.ErrInvalid) {
			if p != nil {
				p.Close()
			}
			t.Errorf("New(%q): got %v, want an error matching dynashard.ErrInvalid", target, err)
		}
	}
	p, err := New("http://127.0.0.1:1", Config{ErrorRate: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, cfg := range bad {
		if err := p.Set(cfg); !errors.Is(err, dynashard.ErrInvalid) {
			t.Errorf("Set(%+v): got %v, want an error matching dynashard.ErrInvalid", cfg, err)
		}
	}
	p.mu.Lock()
	got := p.cfg.ErrorRate
	p.mu.Unlock()
	if got != 0.5 {
		t.Errorf("after rejected Sets: ErrorRate %v, want the old 0.5", got)
	}
}

// TestNewListener: the proxy serves on the caller's listener, names an
// unspecified address by its loopback, and closes the listener it was
// given when it fails or closes.
func TestNewListener(t *testing.T) {
	for _, tc := range []struct{ network, addr, prefix string }{
		{"tcp", "127.0.0.1:0", "http://127.0.0.1:"},
		{"tcp4", "0.0.0.0:0", "http://127.0.0.1:"},
		{"tcp", ":0", "http://127.0.0.1:"},
	} {
		ln, err := net.Listen(tc.network, tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewListener(ln, "http://127.0.0.1:1", Config{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.URL(), tc.prefix) {
			t.Errorf("listening on %s %s: URL %s, want prefix %s", tc.network, tc.addr, p.URL(), tc.prefix)
		}
		// The target refuses connections: the proxy answers 502 itself.
		resp, err := http.Post(p.URL(), "application/x-amz-json-1.0", strings.NewReader("{}"))
		if err != nil {
			t.Errorf("POST %s: %v", p.URL(), err)
		} else {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway {
				t.Errorf("POST %s: status %d, want %d", p.URL(), resp.StatusCode, http.StatusBadGateway)
			}
		}
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		if _, err := ln.Accept(); err == nil {
			t.Errorf("listener %s still open after Close", ln.Addr())
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := NewListener(ln, "http://127.0.0.1:1", Config{ErrorRate: 2}); !errors.Is(err, dynashard.ErrInvalid) || p != nil {
		t.Errorf("NewListener with a bad Config: got %v, %v, want nil, an error matching dynashard.ErrInvalid", p, err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Errorf("listener %s still open after a failed NewListener", ln.Addr())
	}
}
