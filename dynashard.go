// Package dynashard is the root of a library that keeps Amazon DynamoDB
// fast when its keys are not. The work happens in its packages:
//
//   - shard: the Layout of a sharded table (recorded in the table and
//     checked), suffix strategies, the key codec, typed writes and bulk
//     loading;
//   - scatter: one logical Query over every shard of a base, merged in
//     key order, with exact cursors;
//   - chunk: values larger than DynamoDB's 400 KB item limit;
//   - repo: a typed repository built on the three;
//   - timeseries: one table per period;
//   - partition: the guide's partition arithmetic;
//   - dynashardtest: local DynamoDB-compatible servers and a throttling
//     proxy (dynashardtest/faultproxy) for your own tests.
//
// This package holds what they share: the error families every package
// re-exports under its own name (errors.Is(err, chunk.ErrNotFound) and
// errors.Is(err, dynashard.ErrNotFound) are the same test),
// [RetryForFanOut], the SDK retry setting for clients that fan out,
// [Usage] with [WithUsage], what any call of any package cost as DynamoDB
// reports it, and [HTTPStatus], the HTTP status a handler answers a
// failed call with.
//
// Traces and metrics: every package reads the smithy-go TracerProvider
// and MeterProvider of the *dynamodb.Client it is given (its Options), so
// setting them once on the SDK client gives a span per logical call
// (dynashard.<package>.<Method>, with the SDK's per-request spans as its
// children) and dynashard's metrics; with none set, and no Usage in the
// context, nothing is asked of DynamoDB and nothing allocated. See the
// README's "Observability" and examples/observability.
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
