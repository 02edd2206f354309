package stream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/errs"
)

// StreamsClient is the part of *dynamodbstreams.Client a Poller uses.
// *dynamodbstreams.Client implements it. Every request of a Poller goes
// through it, and its retryer retries each request first.
type StreamsClient interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

var _ StreamsClient = (*dynamodbstreams.Client)(nil)

// Defaults of PollerOptions.
const (
	// DefaultMaxConcurrency is the GetRecords requests a pass keeps in
	// flight when PollerOptions.MaxConcurrency is zero.
	DefaultMaxConcurrency = 4
	// DefaultPollInterval is the first wait after a pass that found
	// nothing, when PollerOptions.PollInterval is zero.
	DefaultPollInterval = time.Second
	// DefaultMaxPollInterval caps the waits when
	// PollerOptions.MaxPollInterval is zero.
	DefaultMaxPollInterval = 10 * time.Second
	// MaxLimit is the most records one GetRecords returns, DynamoDB's
	// bound.
	MaxLimit = 1000
)

// PollerOptions configure a Poller. The zero value reads every shard from
// its oldest record, four shards at a time, waits from 1 s to 10 s when
// nothing comes, and polls until ctx ends.
type PollerOptions struct {
	// Checkpoint is where to resume: after the last record it names in
	// each shard, skipping its finished shards. It must belong to the
	// Poller's stream. Zero means every shard from its oldest record
	// (TRIM_HORIZON).
	Checkpoint Checkpoint
	// MaxConcurrency bounds the shards a pass reads at once, one GetRecords
	// each. Zero means DefaultMaxConcurrency; negative is invalid.
	MaxConcurrency int
	// Limit is the most records one GetRecords asks for, 1 to MaxLimit.
	// Zero means MaxLimit. A pass holds at most Limit records (and 1 MB)
	// per shard it reads.
	Limit int32
	// PollInterval is the wait after a pass that found no record; it
	// doubles after each such pass, up to MaxPollInterval. Zero means
	// DefaultPollInterval; negative is invalid.
	PollInterval time.Duration
	// MaxPollInterval caps the waits, and the Poller's own backoff between
	// retries of a request. Zero means DefaultMaxPollInterval, or
	// PollInterval if that is longer; negative is invalid.
	MaxPollInterval time.Duration
	// StopWhenCaughtUp makes Poll return nil once it is caught up: after a
	// pass that found no record and finished no shard, followed by a
	// DescribeStream that lists no new shard. Tests use it to read
	// everything written so far. DynamoDB Local shows a record to the
	// first GetRecords after its write returns. DynamoDB may answer empty
	// before records further on in a shard, as AWS documents. Zero value:
	// Poll runs until ctx ends.
	StopWhenCaughtUp bool
	// SkipTrimmed goes on from the oldest record left where records after
	// the checkpoint are gone (DynamoDB keeps 24 hours of them), losing
	// them. Zero value: Poll fails with ErrTrimmed.
	SkipTrimmed bool
}

// Record is one stream record and the shard it came from. A decoder takes
// the embedded types.Record unchanged.
type Record struct {
	types.Record
	// ShardID is the shard the record was read from.
	ShardID string
}

// Batch is what one GetRecords of one shard returned, handed to Poll's
// function.
type Batch struct {
	// ShardID is the shard the records come from.
	ShardID string
	// Records are in the shard's order; never empty.
	Records []Record
	// Checkpoint is the Poller's checkpoint once Records are processed.
	// Store it with the effects of Records to resume exactly after them.
	Checkpoint Checkpoint
}

// Poller reads one DynamoDB stream through the Streams API. It suits
// local use, tests and small services. Create it with NewPoller; the zero
// Poller is not usable. Its methods are safe for concurrent use, but only
// one Poll runs at a time.
//
// Poll reads in passes. A pass first finds the shards that may be read:
// those not finished whose parent shard is finished or no longer listed.
// It reads them concurrently, one GetRecords each, MaxConcurrency at a
// time. Then it hands each shard's records to the caller's function, one
// shard after another in shard ID order, in the caller's goroutine. So:
//   - each shard's records come in the shard's order;
//   - a child shard's records come only after its parent's, which keeps
//     each item's changes in order across a shard split;
//   - the function is never called concurrently.
//
// A pass that found nothing is followed by a wait: PollInterval, doubling
// up to MaxPollInterval. The checkpoint counts a batch only once the
// function returned nil. Delivery is at least once; it is exactly once
// for a consumer that stores Batch.Checkpoint with the batch's effects.
// DynamoDB may throttle a shard read by more than two processes at once
// (LimitExceededException): run one Poller per stream.
type Poller struct {
	c       StreamsClient
	arn     string
	opts    PollerOptions
	running atomic.Bool

	mu sync.Mutex
	cp Checkpoint
}

// NewPoller returns a Poller of the stream streamARN through c, with the
// PollerOptions optFns set. It sends no request. It returns an error
// matching ErrInvalid, naming the input, for a nil client, a streamARN that
// is not a stream's ARN (a table name, say: StreamARN finds the ARN), an
// invalid option, or a Checkpoint of another stream (also
// ErrInvalidCheckpoint).
func NewPoller(c StreamsClient, streamARN string, optFns ...func(*PollerOptions)) (*Poller, error) {
	if errs.IsNil(c) {
		return nil, fmt.Errorf("stream: nil StreamsClient: %w", ErrInvalid)
	}
	if err := checkARN(streamARN); err != nil {
		return nil, fmt.Errorf("stream: %w: %w", err, ErrInvalid)
	}
	var o PollerOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	if s := o.Checkpoint.StreamARN(); s != "" && s != streamARN {
		return nil, fmt.Errorf("stream: PollerOptions.Checkpoint is of stream %s, not %s: %w", s, streamARN, ErrInvalidCheckpoint)
	}
	return &Poller{c: c, arn: streamARN, opts: o, cp: o.Checkpoint}, nil
}

func (o *PollerOptions) setDefaults() error {
	switch {
	case o.MaxConcurrency < 0:
		return fmt.Errorf("stream: PollerOptions.MaxConcurrency %d is negative: %w", o.MaxConcurrency, ErrInvalid)
	case o.Limit < 0 || o.Limit > MaxLimit:
		return fmt.Errorf("stream: PollerOptions.Limit %d: want 1 to %d, or 0: %w", o.Limit, MaxLimit, ErrInvalid)
	case o.PollInterval < 0 || o.MaxPollInterval < 0:
		return fmt.Errorf("stream: PollerOptions.PollInterval %v or MaxPollInterval %v is negative: %w", o.PollInterval, o.MaxPollInterval, ErrInvalid)
	}
	if o.MaxConcurrency == 0 {
		o.MaxConcurrency = DefaultMaxConcurrency
	}
	if o.Limit == 0 {
		o.Limit = MaxLimit
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.MaxPollInterval == 0 {
		o.MaxPollInterval = max(DefaultMaxPollInterval, o.PollInterval)
	}
	o.MaxPollInterval = max(o.MaxPollInterval, o.PollInterval)
	return nil
}

// Checkpoint returns the checkpoint after the last batch processed: the
// one PollerOptions gave, advanced by every batch whose function returned
// nil and every shard found finished. Store it when Poll returns.
func (p *Poller) Checkpoint() Checkpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cp
}

func (p *Poller) setCheckpoint(cp Checkpoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cp = cp
}

// Poll reads the stream from the Poller's checkpoint and calls fn with
// each batch (see Poller). It returns ctx.Err() once ctx ends. It returns
// nil once caught up with StopWhenCaughtUp, or once a disabled stream is
// read to its end. A later Poll resumes from Checkpoint.
//
// An error of fn is returned wrapped, naming the shard; its batch stays
// unprocessed. A panic in fn is not recovered: no goroutine of Poll runs
// by then. A request that fails with a throttle, a 5xx or a network error
// is sent again, up to 5 times in all, each after the SDK's own retries.
// An expired iterator is replaced. Other errors end Poll:
//   - ErrTrimmed: records after the checkpoint are gone (see SkipTrimmed);
//   - ErrNoStreams: the server has no Streams API, as dynalite;
//   - ErrNotFound: there is no such stream;
//   - ErrInvalid: a nil ctx or fn, a zero Poller, or another Poll running;
//   - else the SDK's error, wrapped.
func (p *Poller) Poll(ctx context.Context, fn func(context.Context, Batch) error) error {
	switch {
	case p == nil || p.c == nil:
		return fmt.Errorf("stream: Poll of a zero Poller (use NewPoller): %w", ErrInvalid)
	case ctx == nil:
		return fmt.Errorf("stream: Poll of %s: nil context: %w", p.arn, ErrInvalid)
	case fn == nil:
		return fmt.Errorf("stream: Poll of %s: nil function: %w", p.arn, ErrInvalid)
	case !p.running.CompareAndSwap(false, true):
		return fmt.Errorf("stream: Poll of %s: another Poll is running: %w", p.arn, ErrInvalid)
	}
	defer p.running.Store(false)
	r := &run{p: p, fn: fn, readers: map[string]*reader{}}
	err := r.loop(ctx)
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
		return ctxErr
	}
	return err
}

// loop is Poll's passes, waits and listings.
func (r *run) loop(ctx context.Context) error {
	if _, err := r.refresh(ctx); err != nil {
		return err
	}
	for idle := 0; ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		got, err := r.pass(ctx)
		if err != nil {
			return err
		}
		if got.finished || time.Since(r.listedAt) > relistEvery {
			if _, err := r.refresh(ctx); err != nil {
				return err
			}
		}
		if got.records || got.finished {
			idle = 0
			continue
		}
		grew, err := r.refresh(ctx)
		switch {
		case err != nil:
			return err
		case grew:
			continue
		case r.list.status == types.StreamStatusDisabled && allFinished(r.list.shards, r.p.Checkpoint()):
			return nil // the stream ended
		case r.p.opts.StopWhenCaughtUp:
			return nil
		}
		wait := backoff.Cap(r.p.opts.PollInterval, r.p.opts.MaxPollInterval, idle)
		if !backoff.Sleep(ctx, nil, wait) {
			return ctx.Err()
		}
		idle++
	}
}
