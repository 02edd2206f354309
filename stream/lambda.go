package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// HandleLambda runs fn on each record of a Lambda DynamoDB event, in
// order, as Lambda's event source mapping delivers one stream shard's
// records. It stops at the first record fn fails and reports it in the
// response's BatchItemFailures. With ReportBatchItemFailures set on the
// mapping, Lambda then delivers that record and the ones after it again,
// and the records before it are done. Without that setting Lambda retries
// the whole batch: fn must be idempotent anyway, as Decoder.Apply is.
//
// A record that cannot be read (a value of an unknown type) is reported
// as failed, with the error, like a record fn fails. A panic in fn is
// not recovered: Lambda retries the batch.
func HandleLambda(ctx context.Context, ev events.DynamoDBEvent, fn func(context.Context, Record) error) (events.DynamoDBEventResponse, error) {
	var resp events.DynamoDBEventResponse
	if fn == nil {
		return resp, fmt.Errorf("%w: stream: HandleLambda: nil function", ErrInvalid)
	}
	for _, lr := range ev.Records {
		if err := ctx.Err(); err != nil {
			return fail(resp, lr, err)
		}
		r, err := lambdaRecord(lr)
		if err == nil {
			err = fn(ctx, r)
		}
		if err != nil {
			return fail(resp, lr, err)
		}
	}
	return resp, nil
}

// fail reports lr as the batch's first failed record. The error is
// returned too, for the caller's log; Lambda reads the response.
func fail(resp events.DynamoDBEventResponse, lr events.DynamoDBEventRecord, err error) (events.DynamoDBEventResponse, error) {
	resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: lr.Change.SequenceNumber}}
	return resp, fmt.Errorf("stream: record %s (sequence number %s): %w", lr.EventID, lr.Change.SequenceNumber, err)
}

// lambdaRecord is lr in the Streams API's form, as the Poller hands it.
// Lambda does not say which shard a record came from: ShardID is empty.
func lambdaRecord(lr events.DynamoDBEventRecord) (Record, error) {
	c := lr.Change
	sr := &types.StreamRecord{
		SequenceNumber: aws.String(c.SequenceNumber),
		SizeBytes:      aws.Int64(c.SizeBytes),
		StreamViewType: types.StreamViewType(c.StreamViewType),
	}
	if !c.ApproximateCreationDateTime.IsZero() {
		sr.ApproximateCreationDateTime = aws.Time(c.ApproximateCreationDateTime.Time.Truncate(time.Second))
	}
	var err error
	if sr.Keys, err = lambdaMap(c.Keys); err != nil {
		return Record{}, fmt.Errorf("keys: %w", err)
	}
	if sr.NewImage, err = lambdaMap(c.NewImage); err != nil {
		return Record{}, fmt.Errorf("new image: %w", err)
	}
	if sr.OldImage, err = lambdaMap(c.OldImage); err != nil {
		return Record{}, fmt.Errorf("old image: %w", err)
	}
	r := types.Record{
		AwsRegion: aws.String(lr.AWSRegion), Dynamodb: sr, EventID: aws.String(lr.EventID),
		EventName: types.OperationType(lr.EventName), EventSource: aws.String(lr.EventSource),
		EventVersion: aws.String(lr.EventVersion),
	}
	if u := lr.UserIdentity; u != nil {
		r.UserIdentity = &types.Identity{Type: aws.String(u.Type), PrincipalId: aws.String(u.PrincipalID)}
	}
	return Record{Record: r}, nil
}

func lambdaMap(m map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		av, err := lambdaValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", clip(k), err)
		}
		out[k] = av
	}
	return out, nil
}

func lambdaValue(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		l := v.List()
		out := make([]types.AttributeValue, len(l))
		for i, e := range l {
			av, err := lambdaValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = av
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		m, err := lambdaMap(v.Map())
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("%w: value of unknown type %d", ErrInvalid, v.DataType())
}
