package scatter

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/adapt"
	"github.com/dynashard/dynashard/internal/avmap"
	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/panics"
	"github.com/dynashard/dynashard/internal/record"
	"github.com/dynashard/dynashard/shard"
)

// DefaultMaxConcurrency caps the requests one call has in flight when
// Options.MaxConcurrency is zero: min(N, DefaultMaxConcurrency).
const DefaultMaxConcurrency = 32

// Client is the part of *dynamodb.Client a Scatter uses: Query for All,
// Page and Count, BatchGetItem for Lookup, and GetItem to read a base's
// layout record (see [shard.Table.Shards]). *dynamodb.Client implements
// it. A Layout whose key attribute names are not the table's is reported
// as a *shard.LayoutError naming them only if the client also has
// DescribeTable (as *dynamodb.Client has) and the permission for it;
// through a client with just these three methods it is the SDK's
// ValidationException, wrapped.
type Client interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Options configure a Scatter, and each call through optFns applied to a
// copy of the Scatter's Options for that call only, as the AWS SDK does
// for an operation. The first four fields set how a call runs, the others
// what it reads (usually set per call). The zero value is ready to use:
// every item of every shard, ascending, bounded concurrency, fail on the
// first shard error, unsigned cursors, no bound on the pages one Page call
// reads. New and every call check the Options and reject invalid ones with
// ErrInvalidQuery before any request.
type Options struct {
	// MaxConcurrency bounds the requests one call keeps in flight. Zero
	// means min(N, DefaultMaxConcurrency); negative is invalid. Every
	// request of a call goes through one SDK client and its shared retry
	// quota, so a bound well below the client's quota keeps a throttled
	// fan-out from draining it (see the package doc). It is a ceiling:
	// a call that meets throttling halves its limit and grows it back
	// (see "When DynamoDB throttles" in the package doc).
	MaxConcurrency int

	// Partial makes a shard's failure non-fatal: All, Page and Count go on
	// with the other shards and end with a *PartialError listing every
	// failed shard. The result is then incomplete, and for an ordered
	// read it is ordered only within what was returned. Zero value: false,
	// the first failure cancels the other shards and is returned as a
	// *ShardError.
	Partial bool

	// CursorKey, when non-empty, signs every cursor Page returns with
	// HMAC-SHA256 and makes Page reject unsigned cursors and cursors with a
	// bad signature. Set it when cursors travel through untrusted clients.
	// It must have at least 16 bytes (a shorter one is invalid), and
	// should be 32 random bytes: a short key can be recovered from one
	// cursor by trying keys. Zero value: cursors are unsigned, and signed
	// ones are rejected.
	CursorKey []byte

	// MaxShardPages bounds the Query pages one Page call reads from any one
	// shard. When a shard needs more, Page returns what it has (possibly
	// fewer than limit items, possibly none) with a cursor that has
	// advanced past everything read, as DynamoDB does for a page whose
	// items were all filtered out. Zero means no bound: Page returns limit
	// items or reaches the end. Negative is invalid.
	MaxShardPages int

	// ConsistentRead asks for strongly consistent reads (not on a global
	// secondary index).
	ConsistentRead bool
	// Descending returns items in descending sort-key order.
	Descending bool
	// Unordered streams items as shards deliver them, in no particular
	// order across shards (each shard's own items stay in order). It saves
	// the merge's waiting for the slowest shard. While a Rebalance may
	// move items under the call, the call remembers the items it returns,
	// to return each once (see "Resharding" in the package doc).
	Unordered bool
	// PageSize is the Limit of each Query request: the items DynamoDB
	// reads per page, before filtering. Zero lets the call choose: All
	// grows its pages from 100 items to max(256, 32,768 / N), or, with a
	// Filter, reads DynamoDB's 1 MB pages; Page asks each shard for one
	// item more than the page still needs (see the package doc's
	// "Concurrency and memory"). Negative is invalid. A call holds at most
	// two pages per shard, so PageSize bounds memory (N × 2 × PageSize
	// items) and, for Page, over-reading.
	PageSize int32

	// KeyCondition is a condition on the layout's sort key alone, in one
	// of the forms DynamoDB allows: a comparison with =, <, <=, > or >=
	// (either way round), "#sk BETWEEN :lo AND :hi" or
	// "begins_with(#sk, :p)", possibly in parentheses, with values of the
	// layout's SortKeyType. The library adds the partition-key part, and
	// parses the condition to check cursors and resume shards (see the
	// package doc); anything else is invalid. Empty means every item of
	// each shard.
	KeyCondition string
	// Filter is a filter expression, applied by DynamoDB after reading.
	Filter string
	// Projection is a projection expression. Empty returns all attributes.
	Projection string
	// Names and Values are the placeholders the expressions use. Names
	// starting with "#dynashard_" and values starting with ":dynashard_"
	// are reserved for the library and rejected.
	Names  map[string]string
	Values map[string]types.AttributeValue

	// Suffixes lists the shards to read, a subset of 1..N (the layout's
	// N) in any order, when only some are wanted. Empty means all of them:
	// suffixes 1..max of the base's shard-count history.
	Suffixes []int
}

// clone copies o deeply enough that an option function changing the copy's
// maps or slices in place leaves o alone.
func (o Options) clone() Options {
	o.CursorKey = slices.Clone(o.CursorKey)
	o.Suffixes = slices.Clone(o.Suffixes)
	o.Names = maps.Clone(o.Names)
	o.Values = maps.Clone(o.Values)
	return o
}

// apply returns a copy of o with optFns applied (nil ones skipped).
func (o Options) apply(optFns []func(*Options)) Options {
	o = o.clone()
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// WithExpression returns an option that takes KeyCondition, Filter,
// Projection, Names and Values from e, as built by the SDK's expression
// package, replacing all five: an expression without a filter clears
// Filter, since the placeholders of another expression would not match.
// The key condition, if any, must be on the sort key only.
func WithExpression(e expression.Expression) func(*Options) {
	return func(o *Options) {
		o.KeyCondition, o.Filter, o.Projection = deref(e.KeyCondition()), deref(e.Filter()), deref(e.Projection())
		o.Names, o.Values = e.Names(), e.Values()
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Scatter reads the bases of one sharded table, each as one logical Query
// over its physical keys. Create it with New; the zero Scatter has no
// client, and its calls fail with ErrInvalidQuery. It is safe for
// concurrent use; it holds no state between calls except cumulative Stats
// (and the process-wide cache of verified layout records).
type Scatter struct {
	c      Client
	layout shard.Layout
	rec    record.Layout // layout described for its record (see describe)
	opts   Options
	obs    *observe.Scope

	mu    sync.Mutex
	stats Stats
}

// New returns a Scatter that reads the table l describes through c, with
// the Options optFns set; each call may change them for itself. The
// client's retryer handles retries of each request; see the package doc
// for settings that suit a fan-out.
//
// New sends no request. It returns an error matching ErrInvalidQuery and
// ErrInvalid, naming the input, for a nil client, an invalid Layout (the
// error then also matches shard.ErrInvalidLayout), a CursorKey of 1 to 15
// bytes, a negative MaxConcurrency, PageSize or MaxShardPages, Suffixes
// outside 1..N or repeated, reserved placeholders, or a KeyCondition that
// is not a condition on the sort key with values of its type.
func New(c Client, l shard.Layout, optFns ...func(*Options)) (*Scatter, error) {
	if errs.IsNil(c) {
		return nil, invalid("nil Client")
	}
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidQuery, err)
	}
	s := &Scatter{c: c, layout: l, rec: describe(l), opts: Options{}.apply(optFns), obs: observe.For(c)}
	if _, err := newShape(l, s.opts); err != nil {
		return nil, err
	}
	return s, nil
}

// Layout returns the layout the Scatter reads.
func (s *Scatter) Layout() shard.Layout { return s.layout }

// describe is l as package record takes it, from l's public values, the
// way package shard describes a Table's Layout (shard's
// TestRecordDescription compares the two): a Scatter and a Table of one
// layout check, and cache, each base's record alike. A base too long
// for its record is an error matching shard.ErrKeyTooLong here, where
// shard makes a *shard.KeyError.
func describe(l shard.Layout) record.Layout {
	return record.Describe(record.Public{
		Table: l.Table, PartitionKey: l.PartitionKey, SortKey: l.SortKey, SortKeyType: l.SortKeyType, Index: l.Index,
		N: l.N(), String: l.String(), HistoryTTL: l.HistoryTTL, DefaultHistoryTTL: shard.DefaultHistoryTTL,
		Unchecked: l.Unchecked, Strategy: reflect.TypeOf(l.Strategy), CheckBase: l.Codec.Check,
		Mismatch: func(base, want, stored string, keys []string) error {
			return &shard.LayoutError{Base: base, Want: want, Stored: stored, Keys: keys}
		},
	})
}

// recordAlwaysDue, set only by the package's tests (RecordAlwaysDue),
// makes checkLayout read every cached record again beside its call.
var recordAlwaysDue atomic.Bool

// minCursorKey is the shortest Options.CursorKey accepted.
const minCursorKey = 16

// plan checks what a call needs before any request (the Scatter, ctx, the
// call's options and base) and plans it.
func (s *Scatter) plan(ctx context.Context, base string, optFns []func(*Options)) (*plan, error) {
	switch {
	case errs.IsNil(s.c):
		return nil, invalid("nil Client (a zero Scatter; use scatter.New)")
	case ctx == nil:
		return nil, invalid("nil ctx (use context.Background() or context.TODO())")
	}
	return newPlan(s.layout, base, s.opts.apply(optFns))
}

// checkLayout checks the layout against the record of p's base before the
// first data request of a call, and widens p to the base's shard-count
// history. Under ConsistentRead the record is read again rather than
// taken from the cache, so that a Reshard made by another process is seen
// at once. A *shard.LayoutError is returned as is.
//
// A history from a cache entry past half its HistoryTTL is used (it is
// within the bound) and read again beside the call's Queries, so that a
// base read at least that often never waits for its record: the call
// must call done, in its own goroutine, before it returns; done waits for
// that read (which the call's ctx bounds, and done cancels first if
// abandon is set: the caller stopped early) and raises a panic of the
// client's there.
func (s *Scatter) checkLayout(ctx context.Context, p *plan) (done func(abandon bool), err error) {
	none := func(bool) {}
	d := s.rec
	if p.o.ConsistentRead {
		d.TTL = 0 // a HistoryTTL < 0: no cached history
	}
	h, due, err := d.Shards(ctx, s.c, p.base)
	if recordAlwaysDue.Load() {
		due = err == nil
	}
	if err != nil {
		return none, err
	}
	if err := p.widen(h); err != nil {
		return none, err
	}
	if !due {
		return none, nil
	}
	rctx, cancel := context.WithCancel(ctx)
	var refreshed sync.WaitGroup
	var panicked error
	refreshed.Go(func() {
		defer panics.Recover(&panicked)
		_, _ = d.History(rctx, s.c, p.base, 0) // on failure the next call reads it
	})
	return func(abandon bool) {
		if abandon {
			cancel()
		}
		refreshed.Wait()
		cancel()
		panics.Raise(panicked)
	}, nil
}

// Stats counts the work a Scatter has done since New. The zero value is
// an empty count.
type Stats struct {
	Queries   int64 // Query requests answered (each retry inside the SDK counts once)
	BatchGets int64 // BatchGetItem requests answered, for Lookup
	Items     int64 // items (or, for Count, matches) DynamoDB returned, after filtering
	Scanned   int64 // items DynamoDB read, before filtering (Query's ScannedCount)
	// Throttled counts the Query requests that met throttling
	// (ProvisionedThroughputExceededException, ThrottlingException,
	// RequestLimitExceeded, …): answered ones the SDK's retryer had to
	// retry after a throttle, and those that failed with one once the
	// retries were spent. Each request counts once.
	Throttled int64
	// Backoffs counts the times a call of All, Page or Count halved its limit on
	// requests in flight because a request met throttling (at most once
	// per round of requests; see the package doc).
	Backoffs int64
	// ConcurrencyLimit is the limit on requests in flight that the next
	// call of All, Page or Count starts at, learned from throttling and shared by
	// the Scatter's calls: the limit the last throttled call reached, or,
	// once a call has grown back to its MaxConcurrency, 0 again, meaning
	// calls start at their MaxConcurrency. A call whose MaxConcurrency is
	// lower starts at that.
	ConcurrencyLimit int
	// MinConcurrencyLimit is the lowest limit any call of All, Page or Count has
	// backed off to; 0 if none has backed off.
	MinConcurrencyLimit int
}

// Stats returns the totals of every call so far. Safe for concurrent use.
func (s *Scatter) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// addQuery counts an answered Query and reports whether the SDK's
// retryer met throttling on the way (see adapt.Observe).
func (s *Scatter) addQuery(out *dynamodb.QueryOutput) (throttled bool) {
	throttled = adapt.Observe(out.ResultMetadata, nil) == adapt.Throttled
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Queries++
	if throttled {
		s.stats.Throttled++
	}
	s.stats.Items += int64(out.Count)
	s.stats.Scanned += int64(out.ScannedCount)
	return throttled
}

// concurrency is the bound on requests in flight for n of them.
func concurrency(o Options, n int) int {
	c := o.MaxConcurrency
	if c <= 0 {
		c = DefaultMaxConcurrency
	}
	return min(c, n)
}

// Item is one item of a logical query: its attributes and the suffix of
// the physical key it was read from.
type Item struct {
	// Suffix is the shard the item came from (1..N).
	Suffix int
	// Attrs holds the item's attributes as DynamoDB returned them, but
	// for those package shard keeps for itself (named "dynashard:…",
	// such as dynashard:w), which are dropped. With a projection it also
	// holds the key attributes the merge and the cursor need, even if the
	// projection leaves them out.
	Attrs map[string]types.AttributeValue
}

// Unmarshal decodes the item into out with attributevalue.UnmarshalMap;
// into a *map[string]types.AttributeValue it copies the item.
func (it Item) Unmarshal(out any) error {
	if err := avmap.Unmarshal(it.Attrs, out); err != nil {
		return fmt.Errorf("scatter: unmarshal item from suffix %d: %w", it.Suffix, err)
	}
	return nil
}

// Errors, matched with errors.Is. Every error about input rejected before
// any request matches ErrInvalid, the family every dynashard package
// shares (errors.Is(err, shard.ErrInvalid) is the same test).
var (
	// ErrInvalid is matched by every error about input rejected before any
	// request: ErrInvalidQuery's and ErrInvalidCursor's.
	ErrInvalid = errs.Invalid
	// ErrInvalidQuery is matched by every error about a call that cannot
	// be run: from New, a nil client, an invalid Layout (also matching
	// shard.ErrInvalidLayout) or invalid Options; from a call, a nil
	// context, a zero Scatter, invalid Options after the call's optFns, an
	// empty or too long base (also matching shard.ErrInvalidKey), a limit
	// below 1, or a Lookup the layout or options rule out. Such errors
	// name the input and are returned before any request is sent.
	ErrInvalidQuery = errs.New("scatter: invalid query", errs.Invalid)
	// ErrInvalidCursor is matched by every *CursorError: a cursor Page
	// cannot use, rejected before any request.
	ErrInvalidCursor = errs.New("scatter: invalid cursor", errs.Invalid)
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidQuery}, args...)...)
}

// ShardError is the failure of one shard's request. It unwraps to the
// error the SDK returned, so errors.As finds the SDK's typed errors.
type ShardError struct {
	Suffix int    // the failed shard
	Key    string // its physical partition-key value
	Err    error
}

func (e *ShardError) Error() string {
	return fmt.Sprintf("scatter: shard %d (%q): %v", e.Suffix, e.Key, e.Err)
}

func (e *ShardError) Unwrap() error { return e.Err }

// PartialError reports an incomplete result under Options.Partial: the
// items returned came from the healthy shards only. Errs lists every
// failed shard in suffix order; errors.As finds each *ShardError.
type PartialError struct {
	Errs []*ShardError
}

func (e *PartialError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scatter: incomplete result, %d shard(s) failed", len(e.Errs))
	for i, se := range e.Errs {
		if i == 3 {
			fmt.Fprintf(&b, "; …")
			break
		}
		fmt.Fprintf(&b, "; %v", se)
	}
	return b.String()
}

// Unwrap returns the shard errors.
func (e *PartialError) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, se := range e.Errs {
		out[i] = se
	}
	return out
}
