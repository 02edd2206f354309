package stream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/stream"
)

// eachStreams is ddbtest.Each on the servers with a Streams API: dynalite
// has none, which TestNoStreams checks.
func eachStreams(t *testing.T, fn func(t *testing.T, s *ddbtest.Server)) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		if s.Kind == localddb.Dynalite {
			t.Skip("dynalite has no Streams API: TestNoStreams checks ErrNoStreams")
		}
		fn(t, s)
	})
}

// streamsClient returns a Streams client for the server behind c: its
// endpoint, region and credentials, a transport of its own (closed when t
// ends, so that leak checks see no idle connection), and the SDK's
// retryer with short waits.
func streamsClient(t *testing.T, c *dynamodb.Client, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.Client, *http.Transport) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	o := c.Options()
	fns := append([]func(*dynamodbstreams.Options){func(so *dynamodbstreams.Options) {
		so.Retryer = retry.NewStandard(func(ro *retry.StandardOptions) {
			dynashard.RetryForFanOut(ro)
			ro.MaxBackoff = 20 * time.Millisecond
		})
	}}, optFns...)
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region: o.Region, BaseEndpoint: o.BaseEndpoint, Credentials: o.Credentials,
		HTTPClient: &http.Client{Transport: tr},
	}, fns...), tr
}

// wrapTransport puts wrap's RoundTripper in front of a Streams client's
// transport.
func wrapTransport(wrap func(next http.RoundTripper) http.RoundTripper) func(*dynamodbstreams.Options) {
	return func(o *dynamodbstreams.Options) {
		hc := o.HTTPClient.(*http.Client)
		o.HTTPClient = &http.Client{Transport: wrap(hc.Transport)}
	}
}

// panicOn makes a Streams client panic with v on every request of op,
// before sending it, as a buggy middleware would.
func panicOn(v any, op string) func(*dynamodbstreams.Options) {
	return func(o *dynamodbstreams.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			if st.ID() != op {
				return nil
			}
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("stream_test/panic",
				func(context.Context, middleware.InitializeInput, middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					panic(v)
				}), middleware.Before)
		})
	}
}

// streamTable creates a table keyed by pk with a NEW_AND_OLD_IMAGES stream
// and returns its name and its stream's ARN.
func streamTable(t *testing.T, s *ddbtest.Server) (string, string) {
	t.Helper()
	in, err := ddbtest.TableInput("pk:S")
	if err != nil {
		t.Fatal(err)
	}
	in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	name := s.CreateTable(t, in)
	arn, err := stream.StreamARN(context.Background(), s.Client(), name)
	if err != nil {
		t.Fatal(err)
	}
	return name, arn
}

// change is a stream record as the tests compare it.
type change struct {
	Key      string
	Event    string
	Old, New map[string]any
}

func changeOf(t *testing.T, r stream.Record) change {
	t.Helper()
	img := func(m map[string]any, err error) map[string]any {
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	keys := img(plain(r.Dynamodb.Keys))
	return change{
		Key: fmt.Sprint(keys["pk"]), Event: string(r.EventName),
		Old: img(plain(r.Dynamodb.OldImage)), New: img(plain(r.Dynamodb.NewImage)),
	}
}

// plain turns a stream image into Go values; nil for no image.
func plain(m map[string]streamtypes.AttributeValue) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	dm, err := attributevalue.FromDynamoDBStreamsMap(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, attributevalue.UnmarshalMap(dm, &out)
}

// writer applies random writes to a table's keys and remembers the stream
// records they must make.
type writer struct {
	c     *dynamodb.Client
	table string
	rnd   *rand.Rand
	items map[string]map[string]any // what each key holds
	n     int                       // a counter, so that every write changes its item
	want  []change
}

func newWriter(c *dynamodb.Client, table string, seed uint64) *writer {
	return &writer{c: c, table: table, rnd: rand.New(rand.NewPCG(seed, 1)), items: map[string]map[string]any{}}
}

// write applies n random writes over keys k0..k4: puts, updates and
// deletes, each changing its item, so that each makes one record.
func (w *writer) write(t *testing.T, n int) {
	t.Helper()
	if err := w.apply(n); err != nil {
		t.Fatal(err)
	}
}

// apply is write for another goroutine than the test's.
func (w *writer) apply(n int) error {
	ctx := context.Background()
	for range n {
		w.n++
		key := fmt.Sprintf("k%d", w.rnd.IntN(5))
		old := w.items[key]
		pk := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}}
		var err error
		var now map[string]any
		switch op := w.rnd.IntN(3); {
		case op == 0 && old != nil:
			_, err = w.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &w.table, Key: pk})
		case op == 1 && old != nil:
			now = map[string]any{"pk": key, "v": float64(w.n), "tag": old["tag"]}
			_, err = w.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: &w.table, Key: pk, UpdateExpression: aws.String("SET v = :v"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: fmt.Sprint(w.n)}},
			})
		default:
			now = map[string]any{"pk": key, "v": float64(w.n), "tag": fmt.Sprintf("put %d", w.n)}
			var item map[string]types.AttributeValue
			if item, err = attributevalue.MarshalMap(now); err == nil {
				_, err = w.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &w.table, Item: item})
			}
		}
		if err != nil {
			return err
		}
		ev := "MODIFY"
		switch {
		case old == nil:
			ev = "INSERT"
		case now == nil:
			ev = "REMOVE"
		}
		w.want = append(w.want, change{Key: key, Event: ev, Old: old, New: now})
		w.items[key] = now
		if now == nil {
			delete(w.items, key)
		}
	}
	return nil
}

// byKey groups changes by key, each key's in order.
func byKey(cs []change) map[string][]change {
	m := map[string][]change{}
	for _, c := range cs {
		m[c.Key] = append(m[c.Key], c)
	}
	return m
}

// collector is a Poll function that keeps every record and checks each
// batch's shape.
type collector struct {
	t       *testing.T
	records []stream.Record
	batches int
}

func (c *collector) fn(_ context.Context, b stream.Batch) error {
	c.t.Helper()
	c.batches++
	if len(b.Records) == 0 {
		c.t.Errorf("batch %d of shard %s: no records", c.batches, b.ShardID)
	}
	for _, r := range b.Records {
		if r.ShardID != b.ShardID {
			c.t.Errorf("record of shard %s in a batch of shard %s", r.ShardID, b.ShardID)
		}
	}
	c.records = append(c.records, b.Records...)
	return nil
}

func (c *collector) changes() []change {
	out := make([]change, len(c.records))
	for i, r := range c.records {
		out[i] = changeOf(c.t, r)
	}
	return out
}

// caughtUp polls p until it is caught up and returns what came.
func caughtUp(t *testing.T, p *stream.Poller) *collector {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	col := &collector{t: t}
	if err := p.Poll(ctx, col.fn); err != nil {
		t.Fatalf("Poll: %v", err)
	}
	return col
}

// fast sets short waits and stops when caught up.
func fast(o *stream.PollerOptions) {
	o.PollInterval, o.MaxPollInterval, o.StopWhenCaughtUp = 10*time.Millisecond, 50*time.Millisecond, true
}
