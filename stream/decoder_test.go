package stream_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
	"github.com/dynashard/dynashard/stream"
)

var (
	interleavings = flag.Int("stream.interleavings", 2000, "interleavings of the stream TestConvergence replays")
	writes        = flag.Int("stream.writes", 60, "writes of each of TestConvergence's three writers (a long run: 2000)")
)

// doc is a document with a large body, stored through a repo.
type doc struct {
	ID   string `dynamodbav:"sk"`
	Body []byte
}

// newTableOn creates a table with the given keys on DynamoDB Local.
func newTableOn(t *testing.T, keys ...string) string {
	return ddbtest.Get(t, localddb.DynamoDBLocal).Table(t, keys...)
}

type order struct {
	PK     string `dynamodbav:"pk"`
	ID     string `dynamodbav:"sk"`
	Amount int
}

// shardedTable creates a table with a NEW_AND_OLD_IMAGES stream on
// DynamoDB Local and returns its clients and stream ARN.
func shardedTable(t *testing.T) (*dynamodb.Client, *dynamodbstreams.Client, string, string) {
	t.Helper()
	s := ddbtest.Get(t, localddb.DynamoDBLocal)
	in, err := ddbtest.TableInput("pk:S", "sk:S")
	if err != nil {
		t.Fatal(err)
	}
	in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages}
	name := s.CreateTable(t, in)
	c := s.Client()
	out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	o := c.Options()
	sc := dynamodbstreams.New(dynamodbstreams.Options{Region: o.Region, BaseEndpoint: o.BaseEndpoint, Credentials: o.Credentials})
	return c, sc, name, aws.ToString(out.Table.LatestStreamArn)
}

// readAll returns every record of the stream so far, each shard's in
// order, shards one after another.
func readAll(t *testing.T, sc *dynamodbstreams.Client, arn string) []types.Record {
	t.Helper()
	ctx := context.Background()
	d, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	var all []types.Record
	for _, sh := range d.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, out.Records...)
			if len(out.Records) == 0 {
				break // caught up on an open shard
			}
			iter = out.NextShardIterator
		}
	}
	return all
}

// retryLate retries call while it fails with ErrTooLate: a loaded machine can
// pass a short fence, and an abandoned request is safe to send again.
func retryLate(t *testing.T, call func() error) {
	t.Helper()
	for range 20 {
		err := call()
		if !errors.Is(err, shard.ErrTooLate) {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("20 calls in a row were too late")
}

// mirror is the reference consumer: per item, the item it holds and its
// State, applying each Change as Decoder.Apply says.
type mirror struct {
	items   map[[2]string]map[string]ddbtypes.AttributeValue
	states  map[[2]string]stream.State
	puts    int
	dels    int
	deleted map[[2]string]bool // the keys of the Deletes applied
	usage   dynashard.Usage    // Apply's requests
}

func newMirror() *mirror {
	return &mirror{items: map[[2]string]map[string]ddbtypes.AttributeValue{}, states: map[[2]string]stream.State{}, deleted: map[[2]string]bool{}}
}

func (m *mirror) apply(t *testing.T, d *stream.Decoder[order], r types.Record) {
	t.Helper()
	e, ok, err := d.Event(r)
	if err != nil {
		t.Fatal(err)
	}
	m.applyEvent(t, d, e, ok)
}

// applyEvent is apply of r's Event (ok as Event returned it).
func (m *mirror) applyEvent(t *testing.T, d *stream.Decoder[order], e stream.Event, ok bool) {
	t.Helper()
	if !ok || e.ID == "" {
		return
	}
	k := [2]string{e.Base, e.ID}
	s := m.states[k]
	ch, err := d.Apply(dynashard.WithUsage(context.Background(), &m.usage), &s, e)
	if err != nil {
		t.Fatal(err)
	}
	m.states[k] = s
	switch ch.Kind {
	case stream.Put:
		m.items[k] = ch.Attributes
		m.puts++
	case stream.Delete:
		delete(m.items, k)
		m.dels++
		m.deleted[k] = true
	}
}

// TestMoveIsNoDelete is the case: 20 items written at Hash(2),
// Reshard(8), Rebalance. The raw stream holds a REMOVE per item moved; the
// Decoder reports 20 Puts and no Delete, and the mirror ends equal to the
// table.
func TestMoveIsNoDelete(t *testing.T) {
	ctx := context.Background()
	c, sc, name, arn := shardedTable(t)
	l := shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2), HistoryTTL: 100 * time.Millisecond}
	tbl, err := shard.NewTable[order](c, l)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		retryLate(t, func() error { return tbl.Put(ctx, "day", order{ID: fmt.Sprintf("o%02d", i), Amount: i}) })
	}
	retryLate(t, func() error { _, err := tbl.Reshard(ctx, "day", 8); return err })
	var moved int
	retryLate(t, func() error {
		p, err := tbl.Rebalance(ctx, "day")
		moved += p.Moved
		return err
	})
	recs := readAll(t, sc, arn)
	raw := map[types.OperationType]int{}
	for _, r := range recs {
		raw[r.EventName]++
	}
	t.Logf("raw stream: %d INSERT, %d MODIFY, %d REMOVE; %d items moved", raw[types.OperationTypeInsert], raw[types.OperationTypeModify], raw[types.OperationTypeRemove], moved)
	if moved == 0 || raw[types.OperationTypeRemove] != moved {
		t.Fatalf("%d items moved, %d REMOVEs in the stream: the test tests nothing", moved, raw[types.OperationTypeRemove])
	}
	d, err := stream.NewDecoder[order](c, l)
	if err != nil {
		t.Fatal(err)
	}
	m := newMirror()
	for _, r := range recs {
		m.apply(t, d, r)
	}
	if m.puts != 20 || m.dels != 0 {
		t.Errorf("decoded %d Puts and %d Deletes; want 20 and 0", m.puts, m.dels)
	}
	checkMirror(t, c, l, m)
}

// checkMirror fails t unless m holds exactly the table's items.
func checkMirror(t *testing.T, c *dynamodb.Client, l shard.Layout, m *mirror) {
	t.Helper()
	if d := diff(m.items, tableItems(t, c, l), l.PartitionKey); d != "" {
		t.Error("the mirror differs from the table: " + d)
	}
}

func sameItem(a, b map[string]ddbtypes.AttributeValue, pk string) bool {
	vis := func(m map[string]ddbtypes.AttributeValue) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if k != pk && !strings.HasPrefix(k, "dynashard:") {
				out[k] = fmt.Sprintf("%#v", v)
			}
		}
		return out
	}
	return maps.Equal(vis(a), vis(b))
}

// deliveries returns recs as Streams may hand them to a consumer: each
// item key's records in order, keys interleaved at random, and, with
// probability redeliver after each record, a run of that key's records
// up to it handed again (a batch delivered twice).
func deliveries(rng *rand.Rand, recs []types.Record, redeliver float64) []types.Record {
	var keys []string
	groups := map[string][]types.Record{}
	for _, r := range recs {
		k := fmt.Sprint(r.Dynamodb.Keys)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var queues [][]types.Record
	for _, k := range keys {
		g := groups[k]
		var q []types.Record
		for i := range g {
			q = append(q, g[i])
			if rng.Float64() < redeliver {
				q = append(q, g[rng.IntN(i+1):i+1]...)
			}
		}
		queues = append(queues, q)
	}
	var out []types.Record
	for len(queues) > 0 {
		i := rng.IntN(len(queues))
		out = append(out, queues[i][0])
		if queues[i] = queues[i][1:]; len(queues[i]) == 0 {
			queues = slices.Delete(queues, i, i+1)
		}
	}
	return out
}

// tableItems is the table's items by logical key (a consistent Scan,
// layout records left out).
func tableItems(t *testing.T, c *dynamodb.Client, l shard.Layout) map[[2]string]map[string]ddbtypes.AttributeValue {
	t.Helper()
	items := map[[2]string]map[string]ddbtypes.AttributeValue{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(l.Table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range out.Items {
			if shard.IsRecord(item) {
				continue
			}
			pk := item[l.PartitionKey].(*ddbtypes.AttributeValueMemberS).Value
			base, _, err := l.Codec.Parse(pk)
			if err != nil {
				t.Fatalf("table holds %q: %v", pk, err)
			}
			items[[2]string{base, item[l.SortKey].(*ddbtypes.AttributeValueMemberS).Value}] = item
		}
	}
	return items
}

// diff describes how the mirror's items differ from the table's; "" if
// they are equal.
func diff(mirror, table map[[2]string]map[string]ddbtypes.AttributeValue, pk string) string {
	var d []string
	for k, want := range table {
		got, ok := mirror[k]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("%v missing", k))
		case !sameItem(got, want, pk):
			d = append(d, fmt.Sprintf("%v is %v, the table's %v", k, got["Amount"], want["Amount"]))
		}
	}
	for k := range mirror {
		if _, ok := table[k]; !ok {
			d = append(d, fmt.Sprintf("%v deleted in the table", k))
		}
	}
	slices.Sort(d)
	return strings.Join(d, "; ")
}

// workload writes random Puts, Updates, Deletes and Loads of a few items of two
// bases from three goroutines, each through one of tbls, while a fourth
// reshards each base and rebalances it, some Rebalances cut short and run
// again. It returns when all are done.
func workload(t *testing.T, tbls []*shard.Table[order], docs *repo.Repo[doc], seed uint64) {
	ctx := context.Background()
	bases := []string{"b1", "b2"}
	var wg sync.WaitGroup
	tbl := tbls[0]
	// A fourth writer puts and deletes documents with large bodies
	// through a repo: inline ones and chunked ones, their parents in the
	// same table (ids L0..L2, so that no item changes type).
	drng := rand.New(rand.NewPCG(seed, 50))
	wg.Go(func() {
		for range *writes / 3 {
			base, id := bases[drng.IntN(len(bases))], fmt.Sprintf("L%d", drng.IntN(3))
			var err error
			if drng.IntN(4) == 0 {
				err = docs.Delete(ctx, base, id)
			} else {
				_, err = docs.Put(ctx, base, doc{ID: id, Body: bytes.Repeat([]byte{byte('a' + drng.IntN(26))}, 1+drng.IntN(600_000))})
			}
			if err != nil && !errors.Is(err, shard.ErrTooLate) && !errors.Is(err, shard.ErrConflict) {
				t.Logf("document %s %s: %v", base, id, err)
			}
		}
	})
	for w := range 3 {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		tbl := tbls[w%len(tbls)]
		wg.Go(func() {
			for range *writes {
				base, id := bases[rng.IntN(len(bases))], fmt.Sprintf("o%d", rng.IntN(6))
				once := func(o *shard.Options) { o.ExactlyOnce = rng.IntN(2) == 0 }
				var err error
				switch rng.IntN(5) {
				case 0, 1:
					err = tbl.Put(ctx, base, order{ID: id, Amount: rng.IntN(1000)}, once)
				case 4: // a bulk load of two items
					second := fmt.Sprintf("o%d", rng.IntN(6))
					_, err = tbl.Load(ctx, func(yield func(string, order) bool) {
						_ = yield(base, order{ID: id, Amount: rng.IntN(1000)}) && yield(base, order{ID: second, Amount: rng.IntN(1000)})
					})
				case 2:
					_, err = tbl.Update(ctx, base, id, expression.Add(expression.Name("Amount"), expression.Value(1)), once)
				default: // o0..o2 are never deleted: a Delete of one is a move surfacing as a delete
					id = fmt.Sprintf("o%d", 3+rng.IntN(3))
					err = tbl.Delete(ctx, base, id, once)
				}
				if err != nil && !errors.Is(err, shard.ErrTooLate) && !errors.Is(err, shard.ErrConflict) {
					t.Logf("%s %s: %v", base, id, err) // a fault the SDK's retries did not outlast: its outcome is unknown
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	wg.Go(func() {
		for round := range max(4, *writes/15) {
			base := bases[round%2]
			_, _ = tbl.Reshard(ctx, base, 1+rng.IntN(6)) // refused while a count is pending (a Grower's), or failed by a fault
			cut, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(300))*time.Millisecond)
			_, _ = tbl.Rebalance(cut, base) // cut short, or not
			cancel()
			for range 20 { // until done: faults and races with the Grower fail some
				if _, err := tbl.Rebalance(ctx, base); err == nil {
					break
				}
			}
		}
	})
	wg.Wait()
}

// TestConvergence: after random writes, deletes and re-creations beside
// Reshards and Rebalances, a consumer applying each Change (and storing
// each State) ends equal to the table, under random interleavings of the
// stream's item keys with batches delivered twice. The checker fails with
// moves read as deletes, and with a consumer that does not keep States.
func TestConvergence(t *testing.T) {
	c, sc, name, arn := shardedTable(t)
	l := shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2), HistoryTTL: 100 * time.Millisecond}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	// The writers and the resharder go through a fault proxy: throttles,
	// 500s and resets before and after the server applied a request. One
	// writer's Table has a Grower, which the throttles make grow.
	p, err := faultproxy.New(aws.ToString(c.Options().BaseEndpoint), faultproxy.Config{ThrottleRate: 0.05, ErrorRate: 0.02, ErrorAfterRate: 0.02,
		ResetBeforeRate: 0.02, ResetAfterRate: 0.02, Seed: int64(seed)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fc := dynamodb.New(c.Options(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL()) })
	var grows atomic.Int64
	g, err := shard.NewGrower(func(o *shard.GrowOptions) {
		o.Window, o.Threshold, o.Sustain, o.MinAttempts, o.MaxN = 100*time.Millisecond, 0.01, 1, 1, 8
		o.OnDecision = func(d shard.Decision) {
			if d.Kind == shard.Grow {
				grows.Add(1)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := shard.NewTable[order](fc, l)
	if err != nil {
		t.Fatal(err)
	}
	grown, err := shard.NewTable[order](fc, l, func(o *shard.Options) { o.Grower = g })
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := chunk.New(fc, name, newTableOn(t, "ChunkKey:S"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := repo.New[doc](fc, l, func(o *repo.Options) { o.Large = &repo.LargeField{Attribute: "Body", Store: chunks} })
	if err != nil {
		t.Fatal(err)
	}
	workload(t, []*shard.Table[order]{tbl, grown}, docs, seed)
	t.Logf("the Grower grew a base %d times", grows.Load())
	recs := readAll(t, sc, arn)
	final := tableItems(t, c, l)
	d, err := stream.NewDecoder[order](&finalReads{Client: c, gets: map[string]*dynamodb.GetItemOutput{}, txs: map[string]*dynamodb.TransactGetItemsOutput{}}, l)
	if err != nil {
		t.Fatal(err)
	}
	raw := map[types.OperationType]int{}
	for _, r := range recs {
		raw[r.EventName]++
	}
	t.Logf("%d records (%v), %d items in the end", len(recs), raw, len(final))
	// Each consumer replays the same interleavings; first is the stream's
	// own order.
	var reads, records int64
	replay := func(apply func(m *mirror, r types.Record)) (bad int, first string) {
		rng := rand.New(rand.NewPCG(seed, 7))
		reads, records = 0, 0
		for i := range *interleavings {
			order := recs
			if i > 0 {
				order = deliveries(rng, recs, 0.2)
			}
			m := newMirror()
			for _, r := range order {
				apply(m, r)
			}
			reads, records = reads+m.usage.Requests(), records+int64(len(order))
			df := diff(m.items, final, l.PartitionKey)
			for k := range m.deleted {
				if k[1] == "o0" || k[1] == "o1" || k[1] == "o2" {
					df += fmt.Sprintf("; %v, never deleted, was", k)
				}
			}
			if df != "" {
				if bad++; first == "" {
					first = fmt.Sprintf("interleaving %d: %s", i, df)
				}
			}
		}
		return bad, first
	}
	// Each record is read once; the replays apply its Event.
	type read struct {
		e  stream.Event
		ok bool
	}
	events := map[string]read{}
	for _, r := range recs {
		e, ok, err := d.Event(r)
		if err != nil {
			t.Fatal(err)
		}
		events[aws.ToString(r.Dynamodb.SequenceNumber)] = read{e, ok}
	}
	applyRead := func(m *mirror, r types.Record) {
		ev := events[aws.ToString(r.Dynamodb.SequenceNumber)]
		m.applyEvent(t, d, ev.e, ev.ok)
	}
	if bad, first := replay(applyRead); bad > 0 {
		t.Errorf("%d of %d interleavings leave the mirror unlike the table; %s", bad, *interleavings, first)
	}
	t.Logf("Apply asked for %.3f requests per record delivered (%d records in %d interleavings, batches delivered twice included; answered from memory after the first)", float64(reads)/float64(records), records, *interleavings)
	// The checker fails the landed behaviour: each record applied as it
	// reads, a REMOVE as a delete.
	if bad, _ := replay(func(m *mirror, r types.Record) { m.applyRaw(t, l, r) }); bad == 0 {
		t.Errorf("records applied as they read (moves as deletes) matched the table in all %d interleavings: the checker tests nothing", *interleavings)
	}
	// And a consumer that does not keep each item's State.
	if bad, _ := replay(func(m *mirror, r types.Record) {
		clear(m.states)
		applyRead(m, r)
	}); bad == 0 {
		t.Errorf("a consumer without States matched the table in all %d interleavings: the checker tests nothing", *interleavings)
	}
}

// applyRaw applies r as a consumer without a Decoder would: the new image
// is the item, a REMOVE deletes it.
func (m *mirror) applyRaw(t *testing.T, l shard.Layout, r types.Record) {
	t.Helper()
	keys, err := attributevalue.FromDynamoDBStreamsMap(r.Dynamodb.Keys)
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := l.Codec.Parse(keys[l.PartitionKey].(*ddbtypes.AttributeValueMemberS).Value)
	if err != nil {
		return // the layout record: a naive consumer's stray item, left out here
	}
	k := [2]string{base, keys[l.SortKey].(*ddbtypes.AttributeValueMemberS).Value}
	if r.EventName == types.OperationTypeRemove {
		delete(m.items, k)
		m.deleted[k] = true
		return
	}
	if m.items[k], err = attributevalue.FromDynamoDBStreamsMap(r.Dynamodb.NewImage); err != nil {
		t.Fatal(err)
	}
}

// finalReads is a client whose reads of items and layout records are
// answered once by the server and then from memory: a replay reads a
// table that no longer changes, so every answer stays true, and
// thousands of interleavings cost one read per item. Writes pass through.
type finalReads struct {
	*dynamodb.Client
	mu   sync.Mutex
	gets map[string]*dynamodb.GetItemOutput
	txs  map[string]*dynamodb.TransactGetItemsOutput
}

func (f *finalReads) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	k := aws.ToString(in.TableName) + keyString(in.Key) + aws.ToString(in.ProjectionExpression)
	f.mu.Lock()
	out, ok := f.gets[k]
	f.mu.Unlock()
	if ok {
		return out, nil
	}
	out, err := f.Client.GetItem(ctx, in, optFns...)
	if err == nil {
		f.mu.Lock()
		f.gets[k] = out
		f.mu.Unlock()
	}
	return out, err
}

func (f *finalReads) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	var k string
	for _, it := range in.TransactItems {
		k += aws.ToString(it.Get.TableName) + keyString(it.Get.Key) + aws.ToString(it.Get.ProjectionExpression) + ";"
	}
	f.mu.Lock()
	out, ok := f.txs[k]
	f.mu.Unlock()
	if ok {
		return out, nil
	}
	out, err := f.Client.TransactGetItems(ctx, in, optFns...)
	if err == nil {
		f.mu.Lock()
		f.txs[k] = out
		f.mu.Unlock()
	}
	return out, err
}

func keyString(key map[string]ddbtypes.AttributeValue) string {
	var s string
	for _, name := range slices.Sorted(maps.Keys(key)) {
		s += fmt.Sprintf("%s=%#v,", name, key[name])
	}
	return s
}

// TestChangeOldAndPosition: a Change from its record's own copy carries
// the item before (the stream's old image) and the record's position.
func TestChangeOldAndPosition(t *testing.T) {
	ctx := context.Background()
	c, sc, name, arn := shardedTable(t)
	l := shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2)}
	tbl, err := shard.NewTable[order](c, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Put(ctx, "day", order{ID: "o1", Amount: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Update(ctx, "day", "o1", expression.Set(expression.Name("Amount"), expression.Value(2))); err != nil {
		t.Fatal(err)
	}
	d, err := stream.NewDecoder[order](c, l)
	if err != nil {
		t.Fatal(err)
	}
	var s stream.State
	var changes []stream.Change[order]
	for _, r := range readAll(t, sc, arn) {
		e, ok, err := d.Event(r)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || e.ID == "" {
			continue
		}
		ch, err := d.Apply(ctx, &s, e)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Sequence != aws.ToString(r.Dynamodb.SequenceNumber) || ch.At.IsZero() {
			t.Errorf("Change at %q %v; the record's sequence number is %q", ch.Sequence, ch.At, aws.ToString(r.Dynamodb.SequenceNumber))
		}
		changes = append(changes, ch)
	}
	if len(changes) != 2 || changes[0].Old != nil || changes[1].Old == nil || changes[1].Old.Amount != 1 || changes[1].Item.Amount != 2 {
		t.Fatalf("changes %+v; want a Put without Old, then a Put of Amount 2 whose Old has Amount 1", changes)
	}
}
