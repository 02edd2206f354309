package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"

	"github.com/dynashard/dynashard/internal/backoff"
)

// requestAttempts is how many times the Poller sends a request that keeps
// failing with an error the SDK deems retryable (a throttle, a 5xx, a
// network error), each after the SDK's own retries; and how many fresh
// iterators it tries for one read.
const requestAttempts = 5

// retryBase is the Poller's first backoff between attempts of a request.
const retryBase = 100 * time.Millisecond

var retryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// reader reads one shard within one Poll: it keeps the shard's iterator
// between passes. Only the pass's goroutine for the shard touches it.
type reader struct {
	id   string
	iter string // "" until obtained, and after an error
	// skip is set when SkipTrimmed found the records after skipFrom gone:
	// the shard is read from TRIM_HORIZON instead.
	skip     bool
	skipFrom string
}

// fetched is one GetRecords answer.
type fetched struct {
	records []types.Record
	end     bool // the shard is closed and read to its end
}

// fetch reads the next records of rd's shard, which the checkpoint has
// read up to after ("" for none). An expired iterator is replaced, from
// after.
func (p *Poller) fetch(ctx context.Context, rd *reader, after string) (fetched, error) {
	for fresh := 1; ; fresh++ {
		out, err := retrying(ctx, p, func() (*dynamodbstreams.GetRecordsOutput, error) {
			return p.getRecords(ctx, rd, after)
		})
		if err == nil {
			rd.iter = aws.ToString(out.NextShardIterator)
			return fetched{records: out.Records, end: out.NextShardIterator == nil}, nil
		}
		rd.iter = ""
		var expired *types.ExpiredIteratorException
		var trimmed *types.TrimmedDataAccessException
		switch {
		case ctx.Err() != nil:
			return fetched{}, ctx.Err()
		case errors.As(err, &expired) && fresh < requestAttempts:
		case errors.As(err, &trimmed) && p.opts.SkipTrimmed && !(rd.skip && rd.skipFrom == after):
			rd.skip, rd.skipFrom = true, after
		case errors.As(err, &trimmed):
			from := "the shard's start"
			if after != "" {
				from = "sequence number " + after + " (the checkpoint's)"
			}
			return fetched{}, fmt.Errorf("stream: shard %s of %s: the records after %s were trimmed: DynamoDB keeps 24 hours of them; PollerOptions.SkipTrimmed goes on from the oldest left: %w: %w",
				rd.id, p.arn, from, ErrTrimmed, err)
		default:
			return fetched{}, fmt.Errorf("stream: shard %s of %s: %w", rd.id, p.arn, err)
		}
	}
}

// getRecords sends one GetRecords, first getting an iterator if rd has
// none: after the checkpoint's record, or the shard's oldest.
func (p *Poller) getRecords(ctx context.Context, rd *reader, after string) (*dynamodbstreams.GetRecordsOutput, error) {
	if rd.iter == "" {
		in := &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(p.arn), ShardId: aws.String(rd.id),
			ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
		}
		if after != "" && !(rd.skip && rd.skipFrom == after) {
			in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(after)
		}
		out, err := p.c.GetShardIterator(ctx, in)
		if err != nil {
			return nil, err
		}
		if out.ShardIterator == nil {
			return &dynamodbstreams.GetRecordsOutput{}, nil // a closed shard, read to its end
		}
		rd.iter = *out.ShardIterator
	}
	return p.c.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(rd.iter), Limit: aws.Int32(p.opts.Limit)})
}

// retrying calls call until it succeeds, fails with an error that is not
// retryable, or has failed requestAttempts times, backing off in between.
func retrying[T any](ctx context.Context, p *Poller, call func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		out, err := call()
		if err == nil || ctx.Err() != nil || attempt+1 == requestAttempts ||
			retryables.IsErrorRetryable(err) != aws.TrueTernary {
			return out, err
		}
		wait := backoff.Jitter(backoff.Cap(retryBase, p.opts.MaxPollInterval, attempt))
		if !backoff.Sleep(ctx, nil, wait) {
			return out, ctx.Err()
		}
	}
}

// describeError wraps an error of DescribeStream, the first request of a
// Poll: a server without the Streams API gets ErrNoStreams, an unknown
// stream ErrNotFound.
func (p *Poller) describeError(err error) error {
	var api smithy.APIError
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &api) && api.ErrorCode() == "UnknownOperationException":
		return fmt.Errorf("stream: the server at %s has no DynamoDB Streams API (dynalite has none; DynamoDB Local and DynamoDB have it), so stream %s cannot be read: %w: %w",
			endpoint(p.c), p.arn, ErrNoStreams, err)
	case errors.As(err, &nf):
		return fmt.Errorf("stream: stream %s: %w: %w", p.arn, ErrNotFound, err)
	}
	return fmt.Errorf("stream: stream %s: %w", p.arn, err)
}

// endpoint names the client's endpoint, for an error message.
func endpoint(c any) string {
	o, ok := c.(interface {
		Options() dynamodbstreams.Options
	})
	switch {
	case !ok:
		return "the client's endpoint"
	case o.Options().BaseEndpoint != nil:
		return *o.Options().BaseEndpoint
	}
	return "the endpoint of region " + o.Options().Region
}
