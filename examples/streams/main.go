// Command streams keeps a mirror table and per-day order counts in step
// with a sharded orders table through its DynamoDB stream, while the
// orders table is resharded and rebalanced live. A naive consumer runs
// beside it, applying each record as it reads.
//
// Orders are sharded by day with shard.Hash(2). The program writes orders
// over three days, updates and deletes some, and halfway through starts
// to reshard each day to 8 keys and rebalance it. Both consumers read the stream through
// a stream.Poller. The dynashard consumer is the function a Lambda would
// run (handle): in Lambda it is
//
//	func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
//		return stream.HandleLambda(ctx, ev, c.handle)
//	}
//
// It decodes each record with a stream.Decoder, then writes the change,
// the item's stream.State and the day's count in one TransactWriteItems.
// At the end the program prints each day's count three ways: in the
// table, by the dynashard consumer, and by the naive one.
//
// It needs DynamoDB Local (dynalite has no streams). By default it starts
// an embedded one (Java 17); -endpoint names another. Run it from
// examples/:
//
//	go run ./streams
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/dynashard/dynashard/examples/internal/backend"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
	"github.com/dynashard/dynashard/stream"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "streams:", err)
		os.Exit(1)
	}
}

// Order is an order of the sharded table.
type Order struct {
	PK     string `dynamodbav:"pk"`
	ID     string `dynamodbav:"sk"`
	Amount int
}

// Summary is each day's order count three ways, for the test.
type Summary struct {
	Days                 []string
	Table, Decoded, Raw  map[string]int64
	Moved, Deleted, Puts int
}

var days = []string{"2026-11-25", "2026-11-26", "2026-11-27"}

func run(ctx context.Context, args []string, out io.Writer) (*Summary, error) {
	fs := flag.NewFlagSet("streams", flag.ContinueOnError)
	fs.SetOutput(out)
	var bcfg backend.Config
	orders := fs.Int("orders", 90, "orders to write over the three days")
	bcfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *orders < 3 {
		return nil, errors.New("want -orders >= 3")
	}
	b, err := backend.Open(ctx, bcfg)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	suffix := time.Now().Format("150405.000")
	l := shard.Layout{Table: "StreamOrders-" + suffix, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2), HistoryTTL: time.Second}
	in, err := l.CreateTableInput()
	if err != nil {
		return nil, err
	}
	in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	if err := b.EnsureTable(ctx, in); err != nil {
		return nil, err
	}
	tbl, err := shard.NewTable[Order](b.Client, l)
	if err != nil {
		return nil, err
	}
	good, err := newConsumer(ctx, b, l, "Mirror-"+suffix)
	if err != nil {
		return nil, err
	}
	naive, err := newConsumer(ctx, b, l, "NaiveMirror-"+suffix)
	if err != nil {
		return nil, err
	}
	defer b.DeleteTables(context.WithoutCancel(ctx), l.Table, good.mirror, naive.mirror)

	fmt.Fprintf(out, "dynashard streams example on %s\n", b.Where)
	s := &Summary{Days: days}
	if err := write(ctx, tbl, *orders, s); err != nil {
		return nil, err
	}
	arn, err := stream.StreamARN(ctx, b.Client, l.Table)
	if err != nil {
		return nil, err
	}
	o := b.Client.Options()
	sc := dynamodbstreams.New(dynamodbstreams.Options{Region: o.Region, BaseEndpoint: o.BaseEndpoint, Credentials: o.Credentials})
	p, err := stream.NewPoller(sc, arn, func(o *stream.PollerOptions) { o.StopWhenCaughtUp = true })
	if err != nil {
		return nil, err
	}
	err = p.Poll(ctx, func(ctx context.Context, batch stream.Batch) error {
		for _, r := range batch.Records {
			if err := good.handle(ctx, r); err != nil {
				return err
			}
			if err := naive.handleRaw(ctx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sc2, err := scatter.New(b.Client, l)
	if err != nil {
		return nil, err
	}
	s.Table, s.Decoded, s.Raw = map[string]int64{}, map[string]int64{}, map[string]int64{}
	fmt.Fprintf(out, "%d orders written, %d updated or deleted, %d moved by Rebalance\n", s.Puts, s.Deleted, s.Moved)
	fmt.Fprintf(out, "%-12s %8s %10s %8s\n", "day", "table", "dynashard", "naive")
	for _, day := range days {
		if s.Table[day], err = sc2.Count(ctx, day, func(o *scatter.Options) { o.ConsistentRead = true }); err != nil {
			return nil, err
		}
		if s.Decoded[day], err = good.count(ctx, day); err != nil {
			return nil, err
		}
		if s.Raw[day], err = naive.count(ctx, day); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "%-12s %8d %10d %8d\n", day, s.Table[day], s.Decoded[day], s.Raw[day])
	}
	return s, nil
}

// write puts orders over the days, then updates and deletes some. Once
// half are written, another goroutine reshards each day to 8 keys and
// rebalances it, moving those already written, while the rest are.
func write(ctx context.Context, tbl *shard.Table[Order], n int, s *Summary) error {
	var err error
	put := func(i int) {
		o := Order{ID: fmt.Sprintf("o%04d", i), Amount: 10 + i}
		err = errors.Join(err, again(func() error { return tbl.Put(ctx, days[i%len(days)], o) }))
		s.Puts++
	}
	for i := range n / 2 {
		put(i)
	}
	var wg sync.WaitGroup
	var reshardErr error
	wg.Go(func() {
		for _, day := range days {
			reshardErr = errors.Join(again(func() error { _, err := tbl.Reshard(ctx, day, 8); return err }), again(func() error {
				p, err := tbl.Rebalance(ctx, day)
				s.Moved += p.Moved
				return err
			}))
			if reshardErr != nil {
				return
			}
		}
	})
	for i := n / 2; i < n; i++ {
		put(i)
	}
	for i := 0; i < n; i += 5 {
		day, id := days[i%len(days)], fmt.Sprintf("o%04d", i)
		if i%10 == 0 {
			err = errors.Join(err, again(func() error { return tbl.Delete(ctx, day, id) }))
		} else {
			err = errors.Join(err, again(func() error {
				_, err := tbl.Update(ctx, day, id, expression.Set(expression.Name("Amount"), expression.Value(1)))
				return err
			}))
		}
		s.Deleted++
	}
	wg.Wait()
	return errors.Join(err, reshardErr)
}

// consumer mirrors the orders table into its own table, keyed by day and
// id, with a count item per day (id "#count").
type consumer struct {
	c      *dynamodb.Client
	dec    *stream.Decoder[Order]
	l      shard.Layout
	mirror string
}

func newConsumer(ctx context.Context, b *backend.Backend, l shard.Layout, name string) (*consumer, error) {
	dec, err := stream.NewDecoder[Order](b.Client, l)
	if err != nil {
		return nil, err
	}
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("day"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("id"), KeyType: types.KeyTypeRange}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("day"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
	}
	return &consumer{c: b.Client, dec: dec, l: l, mirror: name}, b.EnsureTable(ctx, in)
}

// handle is the Lambda handler's body: one record, decoded, and its
// Change, State and count written together. An order's State stays in a
// deleted order's item (live false), so that its records delivered again
// are known.
func (c *consumer) handle(ctx context.Context, r stream.Record) error {
	e, ok, err := c.dec.Event(r.Record)
	if err != nil || !ok || e.ID == "" {
		return err
	}
	key := map[string]types.AttributeValue{"day": &types.AttributeValueMemberS{Value: e.Base}, "id": &types.AttributeValueMemberS{Value: e.ID}}
	got, err := c.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.mirror), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return err
	}
	var st stream.State
	if v, ok := got.Item["state"].(*types.AttributeValueMemberS); ok {
		if err := json.Unmarshal([]byte(v.Value), &st); err != nil {
			return err
		}
	}
	wasLive := false
	if v, ok := got.Item["live"].(*types.AttributeValueMemberBOOL); ok {
		wasLive = v.Value
	}
	ch, err := c.dec.Apply(ctx, &st, e)
	if err != nil || ch.Kind != stream.Put && ch.Kind != stream.Delete {
		return err
	}
	js, err := json.Marshal(st)
	if err != nil {
		return err
	}
	item := map[string]types.AttributeValue{"day": key["day"], "id": key["id"], "state": &types.AttributeValueMemberS{Value: string(js)},
		"live": &types.AttributeValueMemberBOOL{Value: ch.Kind == stream.Put}}
	if ch.Kind == stream.Put {
		item["Amount"] = &types.AttributeValueMemberN{Value: fmt.Sprint(ch.Item.Amount)}
	}
	// The condition makes a concurrent handler of the same order (another
	// stream shard) retry rather than overwrite.
	put := &types.Put{TableName: aws.String(c.mirror), Item: item}
	if got.Item == nil {
		put.ConditionExpression = aws.String("attribute_not_exists(#s)")
	} else {
		put.ConditionExpression = aws.String("#s = :s")
		put.ExpressionAttributeValues = map[string]types.AttributeValue{":s": got.Item["state"]}
	}
	put.ExpressionAttributeNames = map[string]string{"#s": "state"}
	actions := []types.TransactWriteItem{{Put: put}}
	if delta := liveDelta(wasLive, ch.Kind == stream.Put); delta != 0 {
		actions = append(actions, c.countUpdate(e.Base, delta))
	}
	_, err = c.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: actions})
	return err
}

// handleRaw is the naive consumer: the new image is the order, a REMOVE
// deletes it.
func (c *consumer) handleRaw(ctx context.Context, r stream.Record) error {
	e, ok, err := c.dec.Event(r.Record)
	if err != nil || !ok || e.ID == "" {
		return err
	}
	key := map[string]types.AttributeValue{"day": &types.AttributeValueMemberS{Value: e.Base}, "id": &types.AttributeValueMemberS{Value: e.ID}}
	live := e.Item != nil
	out, err := c.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(c.mirror), ReturnValues: types.ReturnValueAllOld,
		Item: map[string]types.AttributeValue{"day": key["day"], "id": key["id"], "live": &types.AttributeValueMemberBOOL{Value: live}}})
	if err != nil {
		return err
	}
	wasLive := false
	if v, ok := out.Attributes["live"].(*types.AttributeValueMemberBOOL); ok {
		wasLive = v.Value
	}
	if delta := liveDelta(wasLive, live); delta != 0 {
		_, err = c.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{c.countUpdate(e.Base, delta)}})
	}
	return err
}

// again sends a write again while it fails with shard.ErrTooLate: a
// request abandoned at the fence (a busy machine, a 1 s HistoryTTL) is
// safe to send again.
func again(write func() error) error {
	for range 10 {
		if err := write(); !errors.Is(err, shard.ErrTooLate) {
			return err
		}
	}
	return write()
}

func liveDelta(was, is bool) int {
	switch {
	case !was && is:
		return 1
	case was && !is:
		return -1
	}
	return 0
}

func (c *consumer) countUpdate(day string, delta int) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:        aws.String(c.mirror),
		Key:              map[string]types.AttributeValue{"day": &types.AttributeValueMemberS{Value: day}, "id": &types.AttributeValueMemberS{Value: "#count"}},
		UpdateExpression: aws.String("ADD #n :d"), ExpressionAttributeNames: map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberN{Value: fmt.Sprint(delta)}},
	}}
}

func (c *consumer) count(ctx context.Context, day string) (int64, error) {
	out, err := c.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.mirror), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"day": &types.AttributeValueMemberS{Value: day}, "id": &types.AttributeValueMemberS{Value: "#count"}}})
	if err != nil || out.Item == nil {
		return 0, err
	}
	var n int64
	_, err = fmt.Sscan(out.Item["n"].(*types.AttributeValueMemberN).Value, &n)
	return n, err
}
