// Package scatter reads one logical partition key of a write-sharded
// DynamoDB table as if it were one Query.
//
// # Model
//
// Write sharding (package shard) spreads the items of one hot logical key,
// say the day "2014-07-09", over N physical keys "2014-07-09.1" …
// "2014-07-09.N". Reading the day back means one Query per physical key and
// a merge, which the DynamoDB guide leaves to the application. A Scatter
// does it:
//
//   - All queries every shard in parallel, each paginating through its
//     LastEvaluatedKey, and yields the items merged in DynamoDB's own
//     sort-key order: strings by UTF-8 bytes, numbers by exact decimal value
//     (38 digits, 1E-130 to 9.99E+125), binary by unsigned bytes. Items with
//     equal sort keys come in suffix order; Descending reverses everything,
//     so a descending read is exactly the reverse of an ascending one. With
//     Query.Unordered items stream as shards deliver them.
//   - Page returns the next limit items and a Cursor that resumes exactly
//     after the last item returned: no duplicate, no gap, same order. It is
//     stateless, for HTTP handlers.
//   - Count counts matches with Select COUNT; Lookup finds an item by its
//     sort key when its suffix is unknown (shard.Random), with BatchGetItem
//     over the N candidate keys, ⌈N/100⌉ requests.
//
// A query may target the table or a secondary index (set Query.TableKey
// then), with a sort-key condition, a filter and a projection, given as
// strings or built with the SDK's expression package (Query.WithExpression).
// The library names the physical partition key with its own placeholders
// "#dynashard_pk" and ":dynashard_pk"; caller placeholders with the prefixes
// "#dynashard_" and ":dynashard_" are rejected rather than silently
// overwritten. Items always carry the key attributes the merge and the
// cursor need, even when the projection leaves them out.
//
// # Concurrency and memory
//
// One call keeps at most Options.MaxConcurrency requests in flight, by
// default min(N, 32). Each shard has at most one request in flight and at
// most two pages in memory: the page being merged and the next one, fetched
// ahead while the first drains. Memory is therefore bounded by N × 2 pages
// (Query.PageSize bounds a page; DynamoDB caps it at 1 MB), never by the
// result size. The ordered merge needs the next item of every shard before
// it can return one, so the slowest shard sets its pace; Unordered does
// not wait. Page asks each shard for at most the items it still needs and
// fetches ahead only when a shard may have to contribute more than its
// current page, so a small page costs about one small request per shard.
// Nothing is sent before the first iteration of All; breaking out of the
// loop or cancelling the context cancels the requests in flight and waits
// for them, so no goroutine outlives a call.
//
// # Cursors
//
// A cursor records, per suffix, the key of the last item actually returned
// to the caller (not DynamoDB's LastEvaluatedKey, which runs ahead of the
// merge), or the LastEvaluatedKey of a page whose every item was returned
// or filtered out, or that the shard is finished. For an index query the
// key includes the table's key, which DynamoDB needs to resume between
// equal index keys. A cursor is base64url text of a versioned binary
// encoding: 18 bytes (50 when signed), plus for each shard that has moved
// about 3 bytes and, per key attribute, its value and 2 bytes. It is
// bound to a fingerprint of the table, index, key attributes, base,
// separator, sort-key condition, filter (with their names and values),
// direction and suffix set: Page rejects a cursor made for anything else,
// and any garbled, truncated or out-of-range cursor, with a *CursorError
// (ErrBadCursor) before sending a request. Projection, page size,
// consistency and Unordered may change between pages. With
// Options.CursorKey cursors are signed with HMAC-SHA256, so a client cannot
// forge a position; without it a cursor is tamper-evident only in its
// structure and binding.
//
// Resuming is exact while the data does not change. Queries are
// read-committed per item, never a snapshot: an item written or deleted
// between pages appears or not depending on where it falls relative to its
// shard's position, but no item is ever returned twice.
//
// # Limits
//
// DynamoDB reads at most 1 MB per Query page before filtering, so a page
// may come back empty yet continue; Query.PageSize (DynamoDB's Limit) also
// counts items before filtering. A filter that removes nearly everything
// can make Page read many pages per shard before it has limit items;
// Options.MaxShardPages bounds that, returning fewer items (even none) with
// a cursor that has advanced. (DynamoDB Local ignores the 1 MB page size
// when a filter is present; real DynamoDB and dynalite do not.)
// BatchGetItem, used by Lookup, reads at most 100 keys per request and may
// leave keys unprocessed; the internal batch engine retries them with
// capped exponential backoff. BatchGetItem reads no index and applies no
// filter, so Lookup accepts neither. Strongly consistent reads are not
// available on global secondary indexes. Physical keys are limited to 2,048
// bytes including the suffix, checked before any request.
//
// # Failure modes
//
// By default the first failing shard cancels the others and the call
// returns a *ShardError naming the suffix and wrapping the SDK's error, so
// errors.As finds both the *ShardError and, say, a
// *types.ProvisionedThroughputExceededException. With Options.Partial the
// call goes on with the healthy shards and ends with a *PartialError
// listing the failed ones; the result is then incomplete, and the cursor
// Page returns retries the failed shards from where they stood. A
// cancelled context ends a call with the context's error. An invalid query
// fails with ErrInvalidQuery before any request.
//
// # Client settings for a fan-out
//
// Every request of a Scatter goes through one SDK client, and the SDK's
// standard retryer shares one retry-quota token bucket per client: 500
// tokens, 5 taken per retry and 10 per timeout, 1 returned per success.
// Under throttling, a few dozen goroutines retrying at once empty it within
// a second, after which every request on that client fails at once with
// "failed to get rate limit token, retry quota exceeded" (aws-sdk-go-v2
// issues #1665 and #3413), including requests of unrelated code. This
// package bounds its own concurrency for that reason; for a client used
// for fan-out reads we recommend turning the quota off and keeping
// retries, since a throttled or truncated response (which the retryer also
// covers) is normal at this scale:
//
//	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
//			so.MaxAttempts = 5              // or retry.AddWithMaxAttempts
//			so.RateLimiter = ratelimit.None // no shared retry quota
//		})
//		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
//			tr.MaxIdleConnsPerHost = 64 // ≥ MaxConcurrency; the SDK keeps 10
//		})
//	})
//
// (retry and ratelimit are github.com/aws/aws-sdk-go-v2/aws/retry and
// .../aws/ratelimit; awshttp is .../aws/transport/http.) Use
// Options.MaxConcurrency to share a table's capacity with other work: a
// scatter over N shards reads N partitions at once, which is its purpose,
// but it also multiplies the read rate of one logical query by up to
// MaxConcurrency.
package scatter
