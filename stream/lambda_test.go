package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dynashard/dynashard/shard"
	"github.com/dynashard/dynashard/stream"
)

// TestHandleLambda: the records the Poller read from DynamoDB Local, in
// the JSON Lambda delivers, go through HandleLambda into a mirror that
// ends equal to the table. A handler that fails on a record reports it as
// the batch's failure and leaves the records after it alone; delivered
// again from there, as Lambda does, the mirror ends equal to the table.
func TestHandleLambda(t *testing.T) {
	ctx := context.Background()
	c, sc, name, arn := shardedTable(t)
	l := shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2), HistoryTTL: 100 * time.Millisecond}
	tbl, err := shard.NewTable[order](c, l)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		retryLate(t, func() error { return tbl.Put(ctx, "day", order{ID: fmt.Sprintf("o%02d", i), Amount: i}) })
	}
	retryLate(t, func() error { return tbl.Delete(ctx, "day", "o03") })
	retryLate(t, func() error { _, err := tbl.Reshard(ctx, "day", 6); return err })
	retryLate(t, func() error { _, err := tbl.Rebalance(ctx, "day"); return err })

	p, err := stream.NewPoller(sc, arn, func(o *stream.PollerOptions) { o.StopWhenCaughtUp = true })
	if err != nil {
		t.Fatal(err)
	}
	var recs []stream.Record
	if err := p.Poll(ctx, func(_ context.Context, b stream.Batch) error {
		recs = append(recs, b.Records...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ev := lambdaEvent(t, arn, recs)
	d, err := stream.NewDecoder[order](c, l)
	if err != nil {
		t.Fatal(err)
	}

	m := newMirror()
	handler := func(failAt string) func(context.Context, stream.Record) error {
		return func(_ context.Context, r stream.Record) error {
			if aws.ToString(r.Dynamodb.SequenceNumber) == failAt {
				return errors.New("the handler's store is down")
			}
			m.apply(t, d, r.Record)
			return nil
		}
	}
	k := len(ev.Records) / 2
	failAt := ev.Records[k].Change.SequenceNumber
	resp, err := stream.HandleLambda(ctx, ev, handler(failAt))
	if err == nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != failAt {
		t.Fatalf("a handler failing at record %d: response %+v, error %v; want that record's sequence number reported", k, resp, err)
	}
	// Lambda delivers the failed record and those after it again.
	ev.Records = ev.Records[k:]
	if resp, err := stream.HandleLambda(ctx, ev, handler("")); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("delivered again: response %+v, error %v", resp, err)
	}
	if m.dels != 1 {
		t.Errorf("decoded %d Deletes; want 1 (o03)", m.dels)
	}
	checkMirror(t, c, l, m)
}

// lambdaEvent is recs as Lambda's event source mapping delivers them: the
// JSON of a DynamoDB event, read back into aws-lambda-go's types.
func lambdaEvent(t *testing.T, arn string, recs []stream.Record) events.DynamoDBEvent {
	t.Helper()
	var out []map[string]any
	for _, r := range recs {
		sr := r.Dynamodb
		change := map[string]any{
			"Keys": lambdaJSON(sr.Keys), "SequenceNumber": aws.ToString(sr.SequenceNumber),
			"SizeBytes": aws.ToInt64(sr.SizeBytes), "StreamViewType": string(sr.StreamViewType),
			"ApproximateCreationDateTime": aws.ToTime(sr.ApproximateCreationDateTime).Unix(),
		}
		if sr.NewImage != nil {
			change["NewImage"] = lambdaJSON(sr.NewImage)
		}
		if sr.OldImage != nil {
			change["OldImage"] = lambdaJSON(sr.OldImage)
		}
		out = append(out, map[string]any{
			"eventID": aws.ToString(r.EventID), "eventName": string(r.EventName), "eventVersion": "1.1",
			"eventSource": "aws:dynamodb", "awsRegion": "us-east-1", "eventSourceARN": arn, "dynamodb": change,
		})
	}
	b, err := json.Marshal(map[string]any{"Records": out})
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Records) != len(recs) {
		t.Fatalf("%d records in the event; want %d", len(ev.Records), len(recs))
	}
	return ev
}

// lambdaJSON is m in DynamoDB's JSON ({"S": "x"}, {"N": "1"}, …).
func lambdaJSON(m map[string]types.AttributeValue) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = valueJSON(v)
	}
	return out
}

func valueJSON(v types.AttributeValue) map[string]any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": v.Value} // encoding/json writes []byte as base64, as Lambda does
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *types.AttributeValueMemberBS:
		return map[string]any{"BS": v.Value}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = valueJSON(e)
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": lambdaJSON(v.Value)}
	}
	panic("unknown attribute value " + strconv.Quote(fmt.Sprintf("%T", v)))
}

// TestHandleLambdaValues: every attribute type comes through Lambda's
// JSON into the Streams API's form unchanged.
func TestHandleLambdaValues(t *testing.T) {
	img := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "day.1"}, "n": &types.AttributeValueMemberN{Value: "-1.5E3"},
		"b": &types.AttributeValueMemberB{Value: []byte{0, 1, 255}}, "t": &types.AttributeValueMemberBOOL{Value: true},
		"z": &types.AttributeValueMemberNULL{Value: true}, "ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"1", "2"}}, "bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "x"}, &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: "7"}}},
	}
	rec := stream.Record{Record: types.Record{EventID: aws.String("e1"), EventName: types.OperationTypeInsert, Dynamodb: &types.StreamRecord{
		Keys: map[string]types.AttributeValue{"pk": img["pk"]}, NewImage: img, SequenceNumber: aws.String("000000000000000000042"),
		StreamViewType: types.StreamViewTypeNewImage, ApproximateCreationDateTime: aws.Time(time.Unix(1700000000, 0)),
	}}}
	var got types.Record
	_, err := stream.HandleLambda(context.Background(), lambdaEvent(t, "arn", []stream.Record{rec}), func(_ context.Context, r stream.Record) error {
		got = r.Record
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec.Record, got, cmpopts.IgnoreUnexported(types.Record{}, types.StreamRecord{}, types.Identity{},
		types.AttributeValueMemberS{}, types.AttributeValueMemberN{}, types.AttributeValueMemberB{}, types.AttributeValueMemberBOOL{},
		types.AttributeValueMemberNULL{}, types.AttributeValueMemberSS{}, types.AttributeValueMemberNS{}, types.AttributeValueMemberBS{},
		types.AttributeValueMemberL{}, types.AttributeValueMemberM{}),
		cmpopts.IgnoreFields(types.Record{}, "AwsRegion", "EventSource", "EventVersion"), cmpopts.IgnoreFields(types.StreamRecord{}, "SizeBytes")); diff != "" {
		t.Errorf("the record through Lambda's JSON (-sent +got):\n%s", diff)
	}
}
