package batch

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	bo "github.com/dynashard/dynashard/internal/backoff"
)

// DynamoDB's limits on one request.
const (
	// MaxWritesPerRequest is BatchWriteItem's limit of put and delete
	// requests, counted across tables.
	MaxWritesPerRequest = 25
	// MaxKeysPerRequest is BatchGetItem's limit of keys across tables.
	MaxKeysPerRequest = 100
	// MaxRequestBytes is the most the engine puts in one BatchWriteItem
	// body, as ddbsize.WireSize counts it. DynamoDB's limit is 16 MB; the
	// decimal reading is used so that neither reading is exceeded.
	MaxRequestBytes = 16_000_000
)

// DefaultStallTimeout is how long a call goes on without progress when
// Options.StallTimeout is zero: long enough to ride out a few seconds of
// total throttling, short enough that a dead table is reported.
const DefaultStallTimeout = 10 * time.Second

// Write is one put or delete request. Exactly one of Put and Delete is set.
type Write struct {
	Table string
	// Put is the whole item to store.
	Put map[string]types.AttributeValue
	// Delete is the primary key of the item to delete.
	Delete map[string]types.AttributeValue
}

// Key is the primary key of one item to read.
type Key struct {
	Table string
	Key   map[string]types.AttributeValue
}

// Item is an item returned by Get and the table it came from.
type Item struct {
	Table string
	Item  map[string]types.AttributeValue
}

// Projection selects the attributes Get returns for a table.
type Projection struct {
	// Expression is a ProjectionExpression such as "pk, #d, info.rating".
	Expression string
	// Names are the ExpressionAttributeNames the expression uses.
	Names map[string]string
}

// WriteAPI is the part of *dynamodb.Client that WriteAll and WriteSeq use.
type WriteAPI interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// GetAPI is the part of *dynamodb.Client that Get uses.
type GetAPI interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Options tunes one call. The zero value of every field is its documented
// default.
type Options struct {
	// MaxConcurrency bounds the requests in flight or backing off at once.
	// Zero means 8.
	MaxConcurrency int

	// MaxInFlightBytes bounds the request bytes (ddbsize.WireSize) of the
	// requests in flight at once; a request larger than the bound is sent
	// alone. Get requests are weighed by their keys only: their responses
	// are bounded by DynamoDB (16 MB each) and by MaxConcurrency. Zero means
	// 64 MiB.
	MaxInFlightBytes int64

	// MaxWaiting bounds, for WriteSeq, the writes pulled from the sequence
	// that wait while pulling goes on: for an earlier write of their key
	// to be done, or for their partition key's pace (see the package doc).
	// MaxWaitingBytes bounds their request bytes (ddbsize.WireSize). Past
	// either bound, pulling waits. Zero means MaxConcurrency ×
	// MaxWritesPerRequest writes and MaxInFlightBytes bytes. WriteAll and
	// Get hold their whole input already, so nothing bounds their waiting
	// entries but the input.
	MaxWaiting      int
	MaxWaitingBytes int64

	// BaseDelay and MaxDelay shape the backoff before leftovers are sent
	// again: a random duration in [0, min(MaxDelay, BaseDelay·2^stalls)),
	// where stalls counts consecutive rounds without progress. Zero means
	// 25 ms and 2 s.
	BaseDelay, MaxDelay time.Duration

	// StallTimeout is how long the call goes on without any entry being
	// done (every response unprocessed or throttled) before it gives up
	// with ErrStalled. It is measured from the last progress, whatever the
	// concurrency. Zero means DefaultStallTimeout.
	StallTimeout time.Duration

	// RetryBudget caps the requests that re-send leftovers or repeat a
	// throttled request, across the call; past it the call gives up with
	// ErrRetryBudget. Zero means no cap (StallTimeout and ctx still bound the
	// call); a negative value allows no retry at all.
	RetryBudget int

	// KeyAttributes maps a table name to its key attribute names, partition
	// key first, sort key second if any. With it a Put's key is checked
	// (present, S/N/B, non-empty, within 2048/1024 bytes) and duplicates
	// are found by key. A table without an entry gets only what can be
	// checked without knowing its key: a Delete or Key must hold 1 or 2
	// attributes with valid key values (2048-byte limit), and two Puts are
	// duplicates only if they are identical items.
	KeyAttributes map[string][]string

	// ConsistentRead asks Get for strongly consistent reads. Default false.
	ConsistentRead bool

	// Projections maps a table name to the attributes Get returns from it;
	// a table without an entry returns whole items.
	Projections map[string]Projection

	// ClientObserves says that the client sends its requests through
	// observe.Do itself: a wrapper such as shard's Load client, which may
	// send one request, several or none per call it is given, and may
	// answer with a *PartialError. The engine then calls it as it is;
	// otherwise every request goes through observe.Do, which asks for the
	// consumed capacity (and records it, with throttled attempts and
	// unprocessed entries) when ctx belongs to an observed call. Default
	// false.
	ClientObserves bool

	// OnProgress, if set, is called after every response with the call's
	// statistics so far. Calls are serialized and made while the engine
	// waits, so it must return quickly. If it panics, the call stops as
	// for a panic of the client: it waits for the requests in flight and
	// panics with the same value in the caller's goroutine.
	OnProgress func(Stats)

	// jitter draws a backoff in [0, d); tests replace it.
	jitter func(d time.Duration) time.Duration
	// maxRequestBytes is MaxRequestBytes unless a test lowers it.
	maxRequestBytes int64
}

func (o *Options) setDefaults() {
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = 8
	}
	if o.MaxInFlightBytes <= 0 {
		o.MaxInFlightBytes = 64 << 20
	}
	if o.MaxWaiting <= 0 {
		o.MaxWaiting = o.MaxConcurrency * MaxWritesPerRequest
	}
	if o.MaxWaitingBytes <= 0 {
		o.MaxWaitingBytes = o.MaxInFlightBytes
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = 25 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 2 * time.Second
	}
	if o.MaxDelay < o.BaseDelay {
		o.MaxDelay = o.BaseDelay
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.maxRequestBytes <= 0 {
		o.maxRequestBytes = MaxRequestBytes
	}
	if o.jitter == nil {
		o.jitter = bo.Jitter
	}
}

// Stats describes what a call did. The zero value means nothing was sent.
type Stats struct {
	// Done counts writes applied, or keys read (found or not).
	Done int
	// Requests counts BatchWriteItem/BatchGetItem calls made.
	Requests int
	// Attempts counts HTTP attempts, including the SDK's own retries.
	Attempts int
	// Retries counts requests that re-sent leftovers or repeated a
	// throttled request; RetryBudget limits it.
	Retries int
	// UnprocessedRounds counts responses that left entries unprocessed,
	// including calls that failed with a throttling error.
	UnprocessedRounds int
	// Throttled counts calls that failed with a throttling error after the
	// SDK's retries.
	Throttled int
	// Abandoned counts entries a wrapping client gave up on at a deadline
	// of its own (PartialError.Unknown), each time; they were sent again
	// and are not in Retries or UnprocessedRounds.
	Abandoned int
	// Paced counts the times an entry waited for its partition key's pace
	// (see the package doc) while other keys' entries went out.
	Paced int
	// KeyRates is, once the call has ended, the rate (units per second)
	// the engine learned for each partition-key value it paced, of those
	// whose state it still kept (it drops idle keys' states once it holds
	// 4,096); nil if none was paced. OnProgress never sees it.
	KeyRates []float64
}

// Sentinel errors, matched with errors.Is.
var (
	// ErrInvalidWrite reports a Write or Key that is malformed: no table,
	// neither or both of Put and Delete, or a key with the wrong attributes.
	ErrInvalidWrite = errors.New("batch: invalid request")
	// ErrDuplicateKey reports two writes or keys of one call with the same
	// primary key; DynamoDB would reject their whole request.
	ErrDuplicateKey = errors.New("batch: duplicate key")
	// ErrRetryBudget reports that Options.RetryBudget was spent.
	ErrRetryBudget = errors.New("batch: retry budget exhausted")
	// ErrStalled reports Options.StallTimeout without progress.
	ErrStalled = errors.New("batch: no progress")
)

// InputError names the write or key that failed validation; Err wraps
// ErrInvalidWrite, ErrDuplicateKey, or one of ddbsize's sentinels
// (ErrItemTooLarge, ErrInvalidKey, ErrInvalidNumber, ErrInvalidValue).
type InputError struct {
	Index int    // position in the input slice or sequence
	Table string // its table
	Key   string // its key attributes as text, when known
	Err   error
}

func (e *InputError) Error() string {
	key := ""
	if e.Key != "" {
		key = ", key " + e.Key
	}
	return fmt.Sprintf("%v (input %d, table %q%s)", e.Err, e.Index, e.Table, key)
}

func (e *InputError) Unwrap() error { return e.Err }

// UnprocessedError is returned when a call ends before everything was done.
// Writes (for WriteAll and WriteSeq) or Keys (for Get) hold exactly the entries
// not done, in input order; every other entry was applied or read. Err is
// the cause: the context's error, ErrRetryBudget, ErrStalled, an *InputError
// met in a sequence, the SDK error that failed a request, or the cause of
// a client's abandoned requests (see PartialError).
//
// An entry whose request ended without a clear answer is listed as not
// done even though DynamoDB may have applied it: MaybeDone says which.
// Puts and deletes of whole items are idempotent, so sending such an
// entry again is safe.
type UnprocessedError struct {
	Writes []Write
	Keys   []Key
	// MaybeDone[i] reports that Writes[i] was sent in a request whose
	// outcome is unknown and never known done since: an error after an
	// attempt that may have been applied (a reset, a timeout, a 5xx, ctx
	// ending mid-request), or a PartialError's Unknown. Such a write may
	// be applied. A write without it was not applied by this call. Nil if
	// no write is such.
	MaybeDone []bool
	Err       error
}

func (e *UnprocessedError) Error() string {
	cause := strings.TrimPrefix(fmt.Sprint(e.Err), "batch: ")
	if e.Keys != nil {
		return fmt.Sprintf("batch: %d keys not read: %s", len(e.Keys), cause)
	}
	if len(e.Writes) == 0 { // a sequence stopped between writes
		return "batch: " + cause
	}
	return fmt.Sprintf("batch: %d writes not done: %s", len(e.Writes), cause)
}

func (e *UnprocessedError) Unwrap() error { return e.Err }

// WriteAll applies writes with BatchWriteItem. It validates every write first
// and sends nothing if one is invalid (an *InputError). It returns nil once
// every write is applied, else an *UnprocessedError listing those that are
// not. Safe for concurrent use; c must be too.
func WriteAll(ctx context.Context, c WriteAPI, writes []Write, optFns ...func(*Options)) (Stats, error) {
	opts := options(optFns)
	return writeAll(ctx, writeSender(c, opts), writes, opts)
}

func writeAll(ctx context.Context, send sender, writes []Write, opts Options) (Stats, error) {
	if len(writes) == 0 {
		return Stats{}, nil
	}
	jobs := make([]*job, len(writes))
	seen := make(map[string]int, len(writes))
	for i, w := range writes {
		j, err := newWriteJob(i, w, opts.KeyAttributes)
		if err != nil {
			return Stats{}, err
		}
		if first, dup := seen[j.fp]; dup {
			return Stats{}, j.inputError(fmt.Errorf("%w: same key as input %d", ErrDuplicateKey, first))
		}
		seen[j.fp] = i
		jobs[i] = j
	}
	e := newEngine(opts, send, MaxWritesPerRequest, opts.maxRequestBytes, false)
	e.feed(jobs)
	left, err := e.run(ctx)
	return e.stats, writesError(left, err)
}

// WriteSeq applies the writes of a sequence with BatchWriteItem, holding
// only about MaxConcurrency requests' worth of them in memory. Writes are
// validated as they are pulled; an invalid one stops the call with an
// *UnprocessedError whose Err is the *InputError. A write with the key of
// an earlier write that is not done yet waits for it, so writes to one key
// are applied in sequence order; pulling goes on meanwhile, with up to
// MaxConcurrency requests' worth of such writes waiting at once.
//
// On failure the error lists the writes pulled but not done; the sequence
// is not pulled further, and Stats.Done + len(Writes) is how many were
// pulled. A call stopped (by ctx, say) before the sequence ended always
// fails, even if every write pulled was done. The sequence is pulled by one goroutine at a time, while the
// engine waits; ctx cannot interrupt a sequence that blocks. If the
// sequence panics, WriteSeq stops pulling, waits for the requests in
// flight, and panics with the same value in the caller's goroutine. A nil
// sequence is an error matching ErrInvalidWrite. Safe for concurrent use; c must be too.
func WriteSeq(ctx context.Context, c WriteAPI, writes iter.Seq[Write], optFns ...func(*Options)) (Stats, error) {
	opts := options(optFns)
	return writeSeq(ctx, writeSender(c, opts), writes, opts)
}

func writeSeq(ctx context.Context, send sender, writes iter.Seq[Write], opts Options) (Stats, error) {
	if writes == nil {
		return Stats{}, fmt.Errorf("%w: the sequence of writes is nil", ErrInvalidWrite)
	}
	next, stop := iter.Pull(writes)
	defer stop()
	i, ended := 0, false
	e := newEngine(opts, send, MaxWritesPerRequest, opts.maxRequestBytes, false)
	e.ordered = true
	e.pull = func() (*job, error) {
		w, ok := next()
		if !ok {
			ended = true
			return nil, nil
		}
		i++
		j, err := newWriteJob(i-1, w, opts.KeyAttributes)
		if err != nil {
			return &job{seq: i - 1, write: w}, err
		}
		return j, nil
	}
	left, err := e.run(ctx)
	if err != nil && len(left) == 0 && !ended {
		// Every write read was done, but the sequence was not read to
		// its end: the writes after them were never sent.
		return e.stats, &UnprocessedError{Err: fmt.Errorf("batch: stopped before the end of the sequence of writes (%d read): %w", i, err)}
	}
	return e.stats, writesError(left, err)
}

// Get reads keys with BatchGetItem and returns the items found, in no
// particular order. It validates every key first and sends nothing if one
// is invalid (an *InputError). On failure it returns the items read so far
// with an *UnprocessedError listing the keys not read. Safe for concurrent
// use; c must be too.
func Get(ctx context.Context, c GetAPI, keys []Key, optFns ...func(*Options)) ([]Item, Stats, error) {
	opts := options(optFns)
	return get(ctx, getSender(c, opts), keys, opts)
}

func get(ctx context.Context, send sender, keys []Key, opts Options) ([]Item, Stats, error) {
	if len(keys) == 0 {
		return nil, Stats{}, nil
	}
	jobs := make([]*job, len(keys))
	seen := make(map[string]int, len(keys))
	for i, k := range keys {
		j, err := newKeyJob(i, k, opts.KeyAttributes)
		if err != nil {
			return nil, Stats{}, err
		}
		if first, dup := seen[j.fp]; dup {
			return nil, Stats{}, j.inputError(fmt.Errorf("%w: same key as input %d", ErrDuplicateKey, first))
		}
		seen[j.fp] = i
		jobs[i] = j
	}
	e := newEngine(opts, send, MaxKeysPerRequest, 0, true)
	e.feed(jobs)
	left, err := e.run(ctx)
	if len(left) > 0 {
		ks := make([]Key, len(left))
		for i, j := range left {
			ks[i] = j.key
		}
		return e.items, e.stats, &UnprocessedError{Keys: ks, Err: err}
	}
	return e.items, e.stats, nil
}

func options(optFns []func(*Options)) Options {
	var o Options
	for _, f := range optFns {
		f(&o)
	}
	o.setDefaults()
	return o
}

func writesError(left []*job, err error) error {
	if len(left) == 0 {
		return nil
	}
	ue := &UnprocessedError{Writes: make([]Write, len(left)), Err: err}
	for i, j := range left {
		ue.Writes[i] = j.write
		if j.unsure {
			if ue.MaybeDone == nil {
				ue.MaybeDone = make([]bool, len(left))
			}
			ue.MaybeDone[i] = true
		}
	}
	return ue
}

// PartialError is what a client that wraps BatchWriteItem (see
// Options.ClientObserves) returns for a request whose entries it settled
// in more than one way: some with requests of its own (shard's Load
// writes some items as transactions), some given up on at a deadline of
// its own. Every entry of the request in neither list below was applied.
// The engine matches the entries back by key, as UnprocessedItems.
type PartialError struct {
	// Unprocessed entries were not applied: they are sent again as
	// UnprocessedItems are, after a backoff.
	Unprocessed map[string][]types.WriteRequest
	// Unknown entries were sent and given up on: they may or may not have
	// been applied. Unless Err ends the call, they are sent again at once.
	// That is neither progress nor a stall; but once nothing has been
	// done for StallTimeout, and entries were abandoned in two rounds at
	// least, the call ends with an error that wraps Abandoned.
	Unknown map[string][]types.WriteRequest
	// Abandoned is why the Unknown entries were given up on.
	Abandoned error
	// Err is the request's error: nil, a throttling error (the request
	// counts as throttled, and the call goes on), or an error that ends
	// the call.
	Err error
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("batch: %d entries unprocessed, %d abandoned (%v): %v",
		count(e.Unprocessed), count(e.Unknown), e.Abandoned, e.Err)
}

func (e *PartialError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Err, e.Abandoned} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func count(wrs map[string][]types.WriteRequest) int {
	n := 0
	for _, l := range wrs {
		n += len(l)
	}
	return n
}
