// Package dynashard is the root of a library that keeps Amazon DynamoDB
// fast when its keys are not. The work happens in its packages and
// commands:
//
//   - shard: the Layout of a sharded table (recorded in the table and
//     checked), suffix strategies, the key codec, typed writes, bulk
//     loading and resharding.
//   - scatter: one logical Query over every shard of a base, merged in key
//     order, with exact cursors.
//   - chunk: values larger than DynamoDB's 400 KB item limit, in chunks,
//     compressed or in S3.
//   - repo: a typed repository built on shard, scatter and chunk.
//   - split: one logical item stored as parts in several tables, one per
//     access pattern.
//   - stream: a sharded table's DynamoDB stream read as changes of its
//     logical items, moves left out.
//   - timeseries: one table per period.
//   - partition: the guide's partition arithmetic.
//   - dynashardtest: local DynamoDB-compatible servers for your own tests.
//   - dynashardtest/faultproxy: a proxy that throttles and fails like
//     DynamoDB, in front of those servers.
//   - s3blob: chunk's object store on Amazon S3, a module of its own.
//   - cmd/dynashard: the dynashard command (analyze, plan, proxy).
//   - bench: the dynashard-bench command, a module of its own, which
//     measures each practice beside a naive baseline.
//
// This package holds what they share:
//
//   - the error families every package re-exports under its own name.
//     errors.Is(err, chunk.ErrNotFound) and errors.Is(err,
//     dynashard.ErrNotFound) are the same test.
//   - [RetryForFanOut], the SDK retry setting for clients that fan out;
//   - [Usage] with [WithUsage]: what any call of any package cost, as
//     DynamoDB reports it;
//   - [HTTPStatus]: the HTTP status a handler answers a failed call with.
//
// Traces and metrics: every package reads the smithy-go TracerProvider and
// MeterProvider of the *dynamodb.Client it is given (its Options). So set
// them once on the SDK client. That gives a span per logical call
// (dynashard.<package>.<Method>), with the SDK's per-request spans as its
// children, and dynashard's metrics. With none set, and no Usage in the
// context, nothing is asked of DynamoDB and nothing allocated. See the
// README's "Observability" and examples/observability.
//
// # Glossary
//
// The terms the packages' docs use, as the code uses them:
//
//   - base: the logical partition-key value that sharding spreads, such as
//     the day "2014-07-09".
//   - id: an item's own key within its base, kept in the sort key (type S).
//     A calculated strategy computes the item's suffix from it.
//   - logical key: the key the application thinks in: the base, and for an
//     item the pair (base, id).
//   - suffix: the number 1..N that a strategy picks for an id.
//   - physical key: the partition-key value actually stored: base,
//     separator and suffix, such as "2014-07-09.7".
//   - strategy: how a suffix is picked (shard.Strategy). Hash and
//     CodePointProduct are calculated (from the id); Random is not.
//   - count, N: the number of suffixes a base is spread over, 1..shard.MaxN
//     (10,000).
//   - layout: the description of a sharded table (shard.Layout): its table
//     or index, key attributes, strategy, separator and HistoryTTL.
//   - layout record: the one item per base, at partition key base +
//     "#dynashard", that records the base's layout and history.
//   - history: a base's shard counts, oldest first, in its layout record.
//     Reads cover suffixes 1..max of it; writers use the last count.
//   - pending count: a count a Reshard has announced, which readers cover
//     but writers use only a fence later.
//   - HistoryTTL: how long a process trusts its cached copy of a base's
//     record (shard.Layout.HistoryTTL, 10 s by default).
//   - view: a process's cached copy of a base's record, trusted for at most
//     the HistoryTTL.
//   - fence: HistoryTTL plus max(HistoryTTL, 1 s). A request made from a
//     view must be done by then, or it fails with shard.ErrTooLate.
//   - Reshard: shard.Table.Reshard, which appends a new count to a base's
//     history.
//   - Grower: shard.Grower, the policy (a Table's Options.Grower) that
//     reshards a base to a larger count under sustained throttling.
//   - Rebalance: shard.Table.Rebalance, which moves a base's items to their
//     keys under the newest count and then retires the older counts.
//   - move: one item's transfer by a Rebalance, in one transaction.
//   - scatter read: a call of package scatter (All, Page, Count, Lookup)
//     that reads suffixes 1..max of a base's history and merges the
//     results.
//   - cursor: scatter.Cursor, text that resumes a walk of Pages exactly
//     after the last item returned. The empty Cursor ends a walk.
//   - parent item: the item in the caller's table that names a payload's
//     current version and holds a small payload inline.
//   - chunk: an item of a chunk table holding up to ChunkSize stored bytes
//     of one version of a payload.
//   - flip: the conditional update of a parent item that makes a new
//     version current.
//   - guide format: chunked items in the layout the DynamoDB developer
//     guide shows, read and written with chunk.Options.Guide.
//   - large value: an attribute stored through a chunk store, so it may
//     exceed the item limit (repo.LargeField, split.LargeField).
//   - split part: one table of a split item, holding some of its attributes
//     under the item's key (split.Part).
//   - period: the span of time one timeseries table holds: a day, a week or
//     a month.
//   - Usage: dynashard.Usage, the totals DynamoDB reported for the requests
//     of the calls made with a context from WithUsage.
//   - logical call: one call of a dynashard method, with all the requests
//     it sends on its behalf; one span, one set of metrics.
package dynashard

import (
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/dynashard/dynashard/internal/errs"
)

// The error families, shared by every package: each package's own
// sentinels (shard.ErrInvalidItem, scatter.ErrInvalidCursor, …) match one
// of them.
var (
	// ErrInvalid: input rejected before any request was sent. The error
	// names the input. An HTTP handler may answer 400 ([HTTPStatus]).
	ErrInvalid = errs.Invalid
	// ErrNotFound: no item has the key asked for.
	ErrNotFound = errs.NotFound
	// ErrConflict: a conditional write lost (a version changed, an item
	// exists that must not, a concurrent writer flipped first).
	ErrConflict = errs.Conflict
)

// RetryForFanOut sets a standard retryer up for a client that dynashard
// fans out through (scatter reads, bulk loads, chunk transfers): five
// attempts, so a reset connection or a truncated body is retried by the
// SDK, and no retry quota. The SDK's default quota (500 tokens, 5 per
// retry) is shared by every call on a client; under throttling a few dozen
// concurrent requests drain it and then every call on the client fails at
// once with "retry quota exceeded" (aws-sdk-go-v2 #1665, #3413). dynashard
// bounds its own concurrency and backs off on its own, so the quota only
// hurts. Use it as the SDK's option functions are used:
//
//	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.Retryer = retry.NewStandard(dynashard.RetryForFanOut)
//	})
func RetryForFanOut(o *retry.StandardOptions) {
	o.MaxAttempts = 5
	o.RateLimiter = ratelimit.None
}
