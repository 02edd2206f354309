package observe

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/internal/backoff"
)

// Op is an SDK client method, e.g. client.Query.
type Op[I, O any] func(context.Context, *I, ...func(*dynamodb.Options)) (*O, error)

// Do sends in through op. If ctx belongs to an observed call (a Tally in
// it, or a provider on the client), in asks DynamoDB for its consumed
// capacity per table and index (ReturnConsumedCapacity INDEXES, unless
// the caller set it) and what the answer reports is added to the call,
// its Tally and the metrics. Otherwise in is sent as it is. Either way,
// if ctx has a deadline, the request is not sent once it has passed
// (see deadline.go).
func Do[I, O any](ctx context.Context, op Op[I, O], in *I, optFns ...func(*dynamodb.Options)) (*O, error) {
	optFns = withDeadlineCheck(ctx, optFns)
	st := from(ctx)
	if st == nil {
		return op(ctx, in, optFns...)
	}
	s := sample{read: ask(in)}
	out, err := op(ctx, in, optFns...)
	s.table = tableOf(in)
	var md middleware.Metadata
	if out != nil {
		md = report(out, &s)
	}
	s.throttled = int64(backoff.ThrottledAttempts(md, err))
	st.record(ctx, &s)
	return out, err
}

// ask sets ReturnConsumedCapacity on in if it has the field and it is
// unset, and reports whether in is a read.
func ask(in any) (read bool) {
	set := func(rc *types.ReturnConsumedCapacity) {
		if *rc == "" {
			*rc = types.ReturnConsumedCapacityIndexes
		}
	}
	switch in := in.(type) {
	case *dynamodb.GetItemInput:
		set(&in.ReturnConsumedCapacity)
		return true
	case *dynamodb.QueryInput:
		set(&in.ReturnConsumedCapacity)
		return true
	case *dynamodb.ScanInput:
		set(&in.ReturnConsumedCapacity)
		return true
	case *dynamodb.BatchGetItemInput:
		set(&in.ReturnConsumedCapacity)
		return true
	case *dynamodb.TransactGetItemsInput:
		set(&in.ReturnConsumedCapacity)
		return true
	case *dynamodb.PutItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.UpdateItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.DeleteItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.BatchWriteItemInput:
		set(&in.ReturnConsumedCapacity)
	case *dynamodb.TransactWriteItemsInput:
		set(&in.ReturnConsumedCapacity)
	}
	return false
}

// tableOf is the table a request names, if it names one.
func tableOf(in any) string {
	switch in := in.(type) {
	case *dynamodb.GetItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.QueryInput:
		return aws.ToString(in.TableName)
	case *dynamodb.ScanInput:
		return aws.ToString(in.TableName)
	case *dynamodb.PutItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.UpdateItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.DeleteItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.DescribeTableInput:
		return aws.ToString(in.TableName)
	case *dynamodb.CreateTableInput:
		return aws.ToString(in.TableName)
	case *dynamodb.BatchWriteItemInput:
		return only(in.RequestItems)
	case *dynamodb.BatchGetItemInput:
		return only(in.RequestItems)
	}
	return ""
}

// only is the one key of m, or "" if it has several.
func only[V any](m map[string]V) string {
	if len(m) != 1 {
		return ""
	}
	for k := range m {
		return k
	}
	return ""
}

// report copies the consumed capacity and unprocessed entries of out into
// s and returns its metadata.
func report(out any, s *sample) middleware.Metadata {
	one := func(cc *types.ConsumedCapacity) {
		if cc != nil {
			s.capacity = append(s.capacity, *cc)
		}
	}
	switch out := out.(type) {
	case *dynamodb.GetItemOutput:
		one(out.ConsumedCapacity)
		return out.ResultMetadata
	case *dynamodb.QueryOutput:
		one(out.ConsumedCapacity)
		return out.ResultMetadata
	case *dynamodb.ScanOutput:
		one(out.ConsumedCapacity)
		return out.ResultMetadata
	case *dynamodb.PutItemOutput:
		one(out.ConsumedCapacity)
		return out.ResultMetadata
	case *dynamodb.UpdateItemOutput:
		one(out.ConsumedCapacity)
		return out.ResultMetadata
	case *dynamodb.DeleteItemOutput:
		one(out.ConsumedCapacity)
		return out.ResultMetadata
	case *dynamodb.BatchGetItemOutput:
		s.capacity = out.ConsumedCapacity
		for _, ka := range out.UnprocessedKeys {
			s.unproc += int64(len(ka.Keys))
		}
		return out.ResultMetadata
	case *dynamodb.BatchWriteItemOutput:
		s.capacity = out.ConsumedCapacity
		for _, ws := range out.UnprocessedItems {
			s.unproc += int64(len(ws))
		}
		return out.ResultMetadata
	case *dynamodb.TransactGetItemsOutput:
		s.capacity = out.ConsumedCapacity
		return out.ResultMetadata
	case *dynamodb.TransactWriteItemsOutput:
		s.capacity = out.ConsumedCapacity
		return out.ResultMetadata
	case *dynamodb.DescribeTableOutput:
		return out.ResultMetadata
	case *dynamodb.CreateTableOutput:
		return out.ResultMetadata
	}
	return middleware.Metadata{}
}
