package faultproxy

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/partition"
)

// The partition model through the proxy, on every server: requests go
// through the SDK, the proxy and the server; the model's clock is stepped
// by hand, so every figure is deterministic.

// stepClock is a proxy clock the test moves. Its lock orders the test's
// moves before the handlers' reads, which the race detector cannot see
// through the sockets.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newPartitionProxy starts a proxy in front of s with the partition model
// on a clock the test steps.
func newPartitionProxy(t *testing.T, s *ddbtest.Server, pc PartitionConfig) (*Proxy, *stepClock) {
	t.Helper()
	p := newProxy(t, s.Endpoint, Config{})
	clk := &stepClock{t: t0}
	p.mu.Lock()
	p.now = clk.now
	p.mu.Unlock()
	if err := p.Set(Config{Model: Partitioned, Partition: pc}); err != nil {
		t.Fatal(err)
	}
	return p, clk
}

// newPartitionFixture creates a table (pk:S, sk:N; on demand on the server)
// behind a partition-model proxy, with throughput tp set in Config when not
// nil, else learnt from the proxy's DescribeTable.
func newPartitionFixture(t *testing.T, s *ddbtest.Server, tp *Throughput, pc PartitionConfig) (*fixture, *stepClock) {
	t.Helper()
	f := &fixture{t: t, s: s, table: s.Table(t, "pk:S", "sk:N"), direct: s.Client()}
	if tp != nil {
		pc.Tables = map[TableKey]Throughput{{Table: f.table}: *tp}
	}
	var clk *stepClock
	f.p, clk = newPartitionProxy(t, s, pc)
	return f, clk
}

// keysOn returns n partition-key values ("<prefix>0", "<prefix>1", ...)
// whose hash falls within r.
func keysOn(t *testing.T, r partition.Range, n int, prefix string) []string {
	t.Helper()
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprint(prefix, i)
		h, err := partition.KeyHash(&types.AttributeValueMemberS{Value: k})
		if err != nil {
			t.Fatal(err)
		}
		if r.Contains(h) {
			keys = append(keys, k)
		}
	}
	return keys
}

func mustNewLayout(t *testing.T, rcu, wcu float64) partition.Layout {
	t.Helper()
	l, err := partition.NewLayout(rcu, wcu, 0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// shares returns the table's partitions' RCU and WCU from the proxy's Stats.
func shares(t *testing.T, p *Proxy, k TableKey) (rcu, wcu []float64) {
	t.Helper()
	ts, ok := p.Stats().Tables[k]
	if !ok {
		t.Fatalf("Stats has no table %+v", k)
	}
	for _, ps := range ts.Partitions {
		rcu, wcu = append(rcu, ps.RCU), append(wcu, ps.WCU)
	}
	return rcu, wcu
}

func repeat(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// createThrough creates a provisioned table through client c (the proxy),
// with a global index byG of 100 RCU / 100 WCU, and deletes it when t ends.
func createThrough(t *testing.T, s *ddbtest.Server, c *dynamodb.Client, rcu, wcu int64) string {
	t.Helper()
	in, err := ddbtest.TableInput("pk:S", "sk:N")
	if err != nil {
		t.Fatal(err)
	}
	in.TableName = aws.String(ddbtest.TableName())
	in.ProvisionedThroughput = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(rcu), WriteCapacityUnits: aws.Int64(wcu)}
	in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS})
	in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
		IndexName:             aws.String("byG"),
		KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
		Projection:            &types.Projection{ProjectionType: types.ProjectionTypeAll},
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(100), WriteCapacityUnits: aws.Int64(100)},
	}}
	if err := localddb.CreateTable(context.Background(), c, in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Client().DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: in.TableName})
	})
	return *in.TableName
}

// updateThrough changes the table's throughput through c and waits until
// the server has applied it.
func updateThrough(t *testing.T, s *ddbtest.Server, c *dynamodb.Client, table string, rcu, wcu int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName:             aws.String(table),
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(rcu), WriteCapacityUnits: aws.Int64(wcu)},
	}); err != nil {
		t.Fatal(err)
	}
	for {
		out, err := s.Client().DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPartitionUpdateTableDoubles: a table created through the proxy at
// 5,000 RCU / 2,000 WCU has four partitions of 1,250 / 500; raising it to
// 8,000 RCU doubles them to eight of 1,000 / 250; lowering it keeps eight.
// Its global index has partitions of its own, which a Query on it uses.
func TestPartitionUpdateTableDoubles(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		p, _ := newPartitionProxy(t, s, PartitionConfig{})
		c := localddb.NewClient(p.URL(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		table := createThrough(t, s, c, 5000, 2000)
		base, gsi := TableKey{Table: table}, TableKey{Table: table, Index: "byG"}
		for _, step := range []struct {
			rcu, wcu int64
			n        int
			share    [2]float64
		}{{5000, 2000, 4, [2]float64{1250, 500}}, {8000, 2000, 8, [2]float64{1000, 250}}, {100, 100, 8, [2]float64{12.5, 12.5}}} {
			if step.rcu != 5000 {
				updateThrough(t, s, c, table, step.rcu, step.wcu)
			}
			rcu, wcu := shares(t, p, base)
			if diff := cmp.Diff(repeat(step.n, step.share[0]), rcu); diff != "" {
				t.Errorf("at %d RCU: RCU per partition (-want +got):\n%s", step.rcu, diff)
			}
			if diff := cmp.Diff(repeat(step.n, step.share[1]), wcu); diff != "" {
				t.Errorf("at %d RCU: WCU per partition (-want +got):\n%s", step.rcu, diff)
			}
		}
		if rcu, wcu := shares(t, p, gsi); len(rcu) != 1 || rcu[0] != 100 || wcu[0] != 100 {
			t.Errorf("index partitions: RCU %v WCU %v, want one of 100/100", rcu, wcu)
		}
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
		st := p.Stats().Tables
		if got := st[gsi].Partitions[0].Read.Units; got != 0.5 {
			t.Errorf("index partition read units: got %v, want 0.5", got)
		}
		for i, ps := range st[base].Partitions {
			if ps.Read.Units != 0 {
				t.Errorf("table partition %d read units: got %v, want 0 (the Query was on the index)", i, ps.Read.Units)
			}
		}
		// A proxy that saw none of it learns the throughput from its own
		// DescribeTable (not the history: one partition for 100/100).
		fresh, _ := newPartitionProxy(t, s, PartitionConfig{})
		fc := localddb.NewClient(fresh.URL(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		if _, err := fc.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
		want := map[TableKey]Throughput{base: {RCU: 100, WCU: 100}, gsi: {RCU: 100, WCU: 100}}
		for k, ts := range fresh.Stats().Tables {
			if ts.Throughput != want[k] || len(ts.Partitions) != 1 {
				t.Errorf("learnt %+v: %+v with %d partitions, want %+v with 1", k, ts.Throughput, len(ts.Partitions), want[k])
			}
			delete(want, k)
		}
		if len(want) != 0 {
			t.Errorf("not learnt: %v", want)
		}
	})
}

// TestPartitionKeysShareBudget: distinct keys on one partition share its
// 500 WCU and are throttled together; a key on another partition is not.
func TestPartitionKeysShareBudget(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		f, clk := newPartitionFixture(t, s, &Throughput{RCU: 5000, WCU: 2000}, PartitionConfig{BurstWindow: time.Second, Adaptive: AdaptiveOff})
		l := mustNewLayout(t, 5000, 2000)
		same, other := keysOn(t, l.Ranges[0], 2, "a"), keysOn(t, l.Ranges[1], 1, "b")[0]
		c := f.noRetry()
		big := func(pk string, sk int) map[string]types.AttributeValue { return item(pk, sk, 40_000) }
		units := modelWCU(size(t, big("x", 0)))
		n := modelAdmitted(500, units) // partition 0 holds one second of 500 WCU
		for i := range n {
			if err := f.put(c, big(same[i%2], i)); err != nil {
				t.Fatalf("put %d of %d within the partition's budget: %v", i, n, err)
			}
		}
		for _, pk := range same {
			if err := f.put(c, big(pk, 99)); !isThrottle(err) {
				t.Errorf("key %s on the spent partition: got %v, want ProvisionedThroughputExceededException", pk, err)
			}
		}
		if err := f.put(c, big(other, 0)); err != nil {
			t.Errorf("key %s on another partition: %v", other, err)
		}
		parts := f.p.Stats().Tables[TableKey{Table: f.table}].Partitions
		if got, want := parts[0].Write, (Usage{Units: float64(n) * units, Throttled: 2}); got != want {
			t.Errorf("partition 0 writes: got %+v, want %+v", got, want)
		}
		if got := parts[1].Write; got.Throttled != 0 || got.Units != units {
			t.Errorf("partition 1 writes: got %+v, want %v units, no throttle", got, units)
		}
		clk.advance(time.Second)
		if err := f.put(c, big(same[1], 100)); err != nil {
			t.Errorf("a second later: %v", err)
		}
	})
}

// TestPartitionSplitShares: with a 10,000-byte partition size, one of the
// four partitions of a 5,000 RCU / 2,000 WCU table fills and splits: three
// partitions at 1,250 / 500 and two at 625 / 250, as the guide says. Its
// bytes follow puts, overwrites, updates and deletes.
func TestPartitionSplitShares(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		f, _ := newPartitionFixture(t, s, &Throughput{RCU: 5000, WCU: 2000}, PartitionConfig{PartitionSize: 10_000})
		r := mustNewLayout(t, 5000, 2000).Ranges[1]
		mid := r.Start + (r.End-r.Start)/2
		lower := keysOn(t, partition.Range{Start: r.Start, End: mid}, 2, "lo")
		upper := keysOn(t, partition.Range{Start: mid + 1, End: r.End}, 1, "up")[0]
		c, ctx := f.noRetry(), context.Background()
		var writes []types.WriteRequest
		for _, pk := range append(lower, upper) {
			writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: item(pk, 1, 4000)}})
		}
		out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{f.table: writes}})
		if err != nil || len(out.UnprocessedItems) != 0 {
			t.Fatalf("BatchWriteItem: %v, %d unprocessed", err, len(out.UnprocessedItems))
		}
		rcu, wcu := shares(t, f.p, TableKey{Table: f.table})
		if diff := cmp.Diff([]float64{1250, 625, 1250, 1250, 625}, rcu); diff != "" {
			t.Errorf("RCU after the split (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]float64{500, 250, 500, 500, 250}, wcu); diff != "" {
			t.Errorf("WCU after the split (-want +got):\n%s", diff)
		}
		sz := func(pk string, payload int) int { return size(t, item(pk, 1, payload)) }
		f.checkBytes(1, sz(lower[0], 4000)+sz(lower[1], 4000), 4, sz(upper, 4000))
		if err := f.put(c, item(lower[0], 1, 100)); err != nil { // overwrite
			t.Fatal(err)
		}
		f.checkBytes(1, sz(lower[0], 100)+sz(lower[1], 4000), 4, sz(upper, 4000))
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(f.table), Key: key(lower[1], 1), UpdateExpression: aws.String("REMOVE v"),
			ReturnValues: types.ReturnValueAllNew,
		}); err != nil {
			t.Fatal(err)
		}
		f.checkBytes(1, sz(lower[0], 100)+size(t, key(lower[1], 1)), 4, sz(upper, 4000))
		if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(f.table), Key: key(upper, 1)}); err != nil {
			t.Fatal(err)
		}
		f.checkBytes(4, 0)
	})
}

// checkBytes checks the stored bytes of partitions: pairs of index, bytes.
func (f *fixture) checkBytes(pairs ...int) {
	f.t.Helper()
	parts := f.p.Stats().Tables[TableKey{Table: f.table}].Partitions
	for i := 0; i+1 < len(pairs); i += 2 {
		if got := parts[pairs[i]].Bytes; got != int64(pairs[i+1]) {
			f.t.Errorf("partition %d bytes: got %d, want %d", pairs[i], got, pairs[i+1])
		}
	}
}

// TestPartitionBulkLoadDilution: a table set to 11,000 WCU for a bulk load
// has 11 partitions; lowered to 200 WCU it keeps them, at 200/11 ≈ 18 WCU
// each, and writes to one partition are held to about 18 WCU a second.
func TestPartitionBulkLoadDilution(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		pc := PartitionConfig{BurstWindow: time.Second}
		f, clk := newPartitionFixture(t, s, &Throughput{WCU: 11000}, pc)
		pc.Tables = map[TableKey]Throughput{{Table: f.table}: {WCU: 200}}
		if err := f.p.Set(Config{Model: Partitioned, Partition: pc}); err != nil {
			t.Fatal(err)
		}
		if _, wcu := shares(t, f.p, TableKey{Table: f.table}); len(wcu) != 11 || math.Abs(wcu[0]-200.0/11) > 1e-9 {
			t.Fatalf("after lowering to 200 WCU: %v, want 11 partitions at 200/11", wcu)
		}
		hot := keysOn(t, mustNewLayout(t, 0, 11000).Ranges[3], 1, "day")[0]
		c := f.noRetry()
		total, sk := 0, 0
		for sec := range 10 {
			admitted := 0
			for ; ; sk++ {
				err := f.put(c, item(hot, sk, 100)) // 1 WCU
				if isThrottle(err) {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				admitted++
			}
			if admitted < 18 || admitted > 19 {
				t.Errorf("second %d: %d writes of 1 WCU admitted, want 18 or 19", sec, admitted)
			}
			total += admitted
			clk.advance(time.Second)
		}
		// One second of burst plus nine of refill, and at most one write
		// admitted on credit.
		if want := 10 * 200.0 / 11; float64(total) < want || float64(total) > want+1 {
			t.Errorf("admitted %d WCU in 10 s, want %.1f", total, want)
		}
	})
}

// TestPartitionOnDemandCap: an on-demand table (learnt from the proxy's
// DescribeTable) has no throughput to spend, but each partition serves at
// most 1,000 WCU a second, whatever burst it saved.
func TestPartitionOnDemandCap(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		f, clk := newPartitionFixture(t, s, nil, PartitionConfig{})
		c := f.noRetry()
		big := func(pk string, sk int) map[string]types.AttributeValue { return item(pk, sk, 200_000) }
		n := modelAdmitted(PartitionWCU, modelWCU(size(t, big("k", 0))))
		for i := range n {
			if err := f.put(c, big("k", i)); err != nil {
				t.Fatalf("put %d of %d: %v", i, n, err)
			}
		}
		for _, pk := range []string{"k", "other"} { // one partition: both over
			if err := f.put(c, big(pk, n)); !isThrottle(err) {
				t.Errorf("put on %s past 1,000 WCU in a second: got %v, want a throttle", pk, err)
			}
		}
		ts := f.p.Stats().Tables[TableKey{Table: f.table}]
		if !ts.OnDemand || len(ts.Partitions) != 1 || ts.Partitions[0].WCU != PartitionWCU || ts.Partitions[0].RCU != PartitionRCU {
			t.Errorf("table %+v, want on demand with one partition of 3,000 RCU / 1,000 WCU", ts)
		}
		clk.advance(time.Second)
		if err := f.put(c, big("other", 0)); err != nil {
			t.Errorf("a second later: %v", err)
		}
	})
}

// TestPartitionAt150PercentThroughProxy plays TestPartitionAt150Percent on
// the servers with a 4 s burst window and a 4 s adaptive delay: admitted
// while the burst lasts, throttled after it, admitted again once adaptive
// capacity lends.
func TestPartitionAt150PercentThroughProxy(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		f, clk := newPartitionFixture(t, s, &Throughput{RCU: 5000, WCU: 2000},
			PartitionConfig{BurstWindow: 4 * time.Second, AdaptiveDelay: 4 * time.Second})
		hot := keysOn(t, mustNewLayout(t, 5000, 2000).Ranges[2], 1, "hot")[0]
		c := f.noRetry()
		it := func(sk int) map[string]types.AttributeValue { return item(hot, sk, 153_000) }
		units := modelWCU(size(t, it(0)))
		if offered := 5 * units; offered != 750 {
			t.Fatalf("offered %v WCU/s, want 150 %% of 500", offered)
		}
		var throttled [20]int
		for step := range 5 * len(throttled) { // five writes a second
			if err := f.put(c, it(step)); isThrottle(err) {
				throttled[step/5]++
			} else if err != nil {
				t.Fatal(err)
			}
			clk.advance(200 * time.Millisecond)
		}
		t1 := slices.IndexFunc(throttled[:], func(n int) bool { return n > 0 })
		if t1 < 7 || t1 > 9 {
			t.Fatalf("first throttle in second %d (%v), want the 2,000 WCU burst to last about 8 s", t1, throttled)
		}
		for sec := t1; sec < t1+4; sec++ {
			if throttled[sec] == 0 {
				t.Errorf("second %d, during the adaptive delay: not throttled (%v)", sec, throttled)
			}
		}
		for sec := t1 + 5; sec < len(throttled); sec++ {
			if throttled[sec] != 0 {
				t.Errorf("second %d, after the adaptive delay: %d throttled (%v)", sec, throttled[sec], throttled)
			}
		}
		if ps := f.p.Stats().Tables[TableKey{Table: f.table}].Partitions[2]; ps.Write.Borrowed == 0 {
			t.Errorf("partition 2: %+v, want borrowed units", ps.Write)
		}
	})
}

// TestPartitionModelSwitch: Set switches models; the per-key model reports
// no tables.
func TestPartitionModelSwitch(t *testing.T) {
	p, err := New("http://127.0.0.1:1", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if st := p.Stats(); st.Tables != nil {
		t.Errorf("per-key model: Tables %v, want nil", st.Tables)
	}
	k := TableKey{Table: "t"}
	if err := p.Set(Config{Model: Partitioned, Partition: PartitionConfig{Tables: map[TableKey]Throughput{k: {RCU: 5000, WCU: 2000}}}}); err != nil {
		t.Fatal(err)
	}
	if got := len(p.Stats().Tables[k].Partitions); got != 4 {
		t.Errorf("partition model: %d partitions, want 4", got)
	}
	if err := p.Set(Config{}); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Tables != nil {
		t.Errorf("back to per-key: Tables %v, want nil", st.Tables)
	}
}

func TestPartitionConfigValidation(t *testing.T) {
	for _, pc := range []PartitionConfig{
		{BurstWindow: -1}, {AdaptiveDelay: -time.Second}, {Adaptive: AdaptiveOff + 1}, {Adaptive: -1},
		{PartitionSize: -1}, {TimeScale: -1}, {TimeScale: math.NaN()}, {TimeScale: math.Inf(1)},
		{Tables: map[TableKey]Throughput{{}: {WCU: 1}}},
		{Tables: map[TableKey]Throughput{{Table: "t"}: {WCU: -1}}},
		{Tables: map[TableKey]Throughput{{Table: "t"}: {RCU: math.Inf(1)}}},
		{Tables: map[TableKey]Throughput{{Table: "t"}: {WCU: 1e12}}},
	} {
		if err := (Config{Model: Partitioned, Partition: pc}).validate(); err == nil {
			t.Errorf("validate(%+v): got nil error, want one", pc)
		}
	}
	if err := (Config{Model: 7}).validate(); err == nil {
		t.Errorf("Model 7: got nil error, want one")
	}
	if err := (Config{Model: Partitioned, Partition: PartitionConfig{Tables: map[TableKey]Throughput{{Table: "t"}: {OnDemand: true, WCU: -1}}}}).validate(); err != nil {
		t.Errorf("on demand ignores RCU and WCU: %v", err)
	}
}
