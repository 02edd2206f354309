package scatter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DefaultMaxConcurrency caps the requests one call has in flight when
// Options.MaxConcurrency is zero: min(N, DefaultMaxConcurrency).
const DefaultMaxConcurrency = 32

// Client is the part of *dynamodb.Client a Scatter uses: Query for All,
// Page and Count, BatchGetItem for Lookup. *dynamodb.Client implements it.
type Client interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Options configure a Scatter. The zero value is ready to use: bounded
// concurrency, fail on the first shard error, unsigned cursors, no bound on
// the pages one Page call reads.
type Options struct {
	// MaxConcurrency bounds the requests one call keeps in flight. Zero
	// means min(N, DefaultMaxConcurrency). Every request of a call goes
	// through one SDK client and its shared retry quota, so a bound well
	// below the client's quota keeps a throttled fan-out from draining it
	// (see the package doc).
	MaxConcurrency int

	// Partial makes a shard's failure non-fatal: All, Page and Count go on
	// with the other shards and end with a *PartialError listing every
	// failed shard. The result is then incomplete, and for an ordered query
	// it is ordered only within what was returned. Zero value: false, the
	// first failure cancels the other shards and is returned as a
	// *ShardError.
	Partial bool

	// CursorKey, when non-empty, signs every cursor Page returns with
	// HMAC-SHA256 and makes Page reject unsigned cursors and cursors with a
	// bad signature. Set it when cursors travel through untrusted clients.
	// Zero value: cursors are unsigned, and signed ones are rejected.
	CursorKey []byte

	// MaxShardPages bounds the Query pages one Page call reads from any one
	// shard. When a shard needs more, Page returns what it has (possibly
	// fewer than limit items, possibly none) with a cursor that has
	// advanced past everything read, as DynamoDB does for a page whose
	// items were all filtered out. Zero means no bound: Page returns limit
	// items or reaches the end.
	MaxShardPages int
}

// Scatter runs logical queries over every physical key of a sharded
// partition key. Create it with New. It is safe for concurrent use; it
// holds no state between calls except cumulative Stats.
type Scatter struct {
	c    Client
	opts Options

	mu    sync.Mutex
	stats Stats
}

// New returns a Scatter that sends its requests through c. The client's
// retryer handles retries of each request; see the package doc for
// settings that suit a fan-out.
func New(c Client, optFns ...func(*Options)) *Scatter {
	s := &Scatter{c: c}
	for _, f := range optFns {
		f(&s.opts)
	}
	s.opts.CursorKey = append([]byte(nil), s.opts.CursorKey...)
	return s
}

// Stats counts the work a Scatter has done since New. The zero value is
// an empty count.
type Stats struct {
	Queries   int64 // Query requests answered (each retry inside the SDK counts once)
	BatchGets int64 // BatchGetItem requests answered, for Lookup
	Items     int64 // items (or, for Count, matches) DynamoDB returned, after filtering
	Scanned   int64 // items DynamoDB read, before filtering (Query's ScannedCount)
	// ConsumedCapacity is the read capacity units DynamoDB reported, summed
	// over every request. Local servers may report none.
	ConsumedCapacity float64
}

// Stats returns the totals of every call so far. Safe for concurrent use.
func (s *Scatter) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Scatter) addQuery(out *dynamodb.QueryOutput) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Queries++
	s.stats.Items += int64(out.Count)
	s.stats.Scanned += int64(out.ScannedCount)
	if cc := out.ConsumedCapacity; cc != nil && cc.CapacityUnits != nil {
		s.stats.ConsumedCapacity += *cc.CapacityUnits
	}
}

func (s *Scatter) concurrency(n int) int {
	c := s.opts.MaxConcurrency
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
	// Attrs holds the item's attributes as DynamoDB returned them. With a
	// projection it also holds the key attributes the merge and the cursor
	// need, even if the projection leaves them out.
	Attrs map[string]types.AttributeValue
}

// Unmarshal decodes the item into out with attributevalue.UnmarshalMap.
func (it Item) Unmarshal(out any) error {
	if err := attributevalue.UnmarshalMap(it.Attrs, out); err != nil {
		return fmt.Errorf("scatter: unmarshal item from suffix %d: %w", it.Suffix, err)
	}
	return nil
}

// ErrInvalidQuery is matched (errors.Is) by every error about a Query that
// cannot be run: missing fields, a bad shard count or base, a reserved
// placeholder. Such errors are returned before any request is sent.
var ErrInvalidQuery = errors.New("scatter: invalid query")

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
	errs := make([]error, len(e.Errs))
	for i, se := range e.Errs {
		errs[i] = se
	}
	return errs
}
