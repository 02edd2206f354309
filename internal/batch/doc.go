// Package batch is dynashard's one way of writing and reading many items:
// WriteAll and WriteSeq send puts and deletes with BatchWriteItem, Get
// reads keys with BatchGetItem, and each returns only when every entry is
// done or the call gives up — and then it says exactly which entries are
// not done.
//
// # Model
//
// Entries are validated, then packed into requests of at most 25 writes and
// 16 MB of JSON (MaxWritesPerRequest, MaxRequestBytes; sizes from
// ddbsize.WireSize, binary as base64) or 100 keys (MaxKeysPerRequest),
// mixing tables freely. Up to Options.MaxConcurrency requests are in flight
// or backing off at once, and their bodies total at most
// Options.MaxInFlightBytes. Entries DynamoDB returns in UnprocessedItems or
// UnprocessedKeys are matched back to what was sent (by key, numbers by
// value) and folded into the next request ahead of fresh entries, so
// requests stay full rather than trickling out a few leftovers at a time.
//
// Leftovers wait before they go out again, with full jitter: a random time
// in [0, d). Rounds belong to the whole engine, not to one request: the
// first response of the current round in which nothing was done (every
// entry unprocessed, or a throttling error) ends the round, adds one to a
// stall count and closes a gate that every worker waits at, whether it has
// leftovers or fresh entries to send, for a random time in
// [0, min(MaxDelay, BaseDelay·2^stalls)) (25 ms and 2 s by default).
// Responses to requests sent before the gate closed belong to the round
// that already ended and count nothing, so a call backs off as one client
// however many requests it has in flight. Any response that does some of
// its entries resets the count and opens the gate; its own leftovers then
// wait a random time in [0, BaseDelay).
// BatchGetItem also returns UnprocessedKeys merely because a response
// reached its size limit (about 16 MB, or 1 MB from one partition in
// practice), with no throttling at all. Such a partial needs no wait, and
// the engine tells it apart by a heuristic: a BatchGetItem partial that
// made progress (some keys were read) is taken as size-driven and its
// leftovers go out at once; one that read nothing is taken as throttling
// and backs off. A partition throttled while others answer is thus retried
// without delay until only its keys are left, then backs off like any
// stalled round. BatchWriteItem leftovers always mean throttling, so
// writes always wait.
//
// Errors the SDK returns after its own retries are of two kinds.
// ProvisionedThroughputExceededException, ThrottlingException and
// RequestLimitExceeded mean the whole request was not done and is retried
// like a stalled round. Any other error fails the call.
//
// # Limits and validation
//
// Nothing is sent for a WriteAll or Get whose input is invalid; the
// *InputError names the entry by index, table and key: an item over 409,600
// bytes (ddbsize's count, UTF-8), a value DynamoDB would refuse (bad number,
// empty set, NULL false, …), a missing, empty or oversized key value (2048
// bytes partition, 1024 sort), both or neither of Put and Delete, and two
// entries with the same key — DynamoDB would reject their whole request.
// Keys are only fully checked for tables listed in Options.KeyAttributes;
// for other tables see that field. WriteSeq validates as it pulls and, since
// it cannot remember a whole stream, orders rather than rejects repeated
// keys: a write waits until the earlier write of its key is done.
//
// # Failure
//
// A call ends early when ctx is done, when Options.RetryBudget retries have
// been spent (ErrRetryBudget), when nothing has been done for
// Options.StallTimeout (ErrStalled; 10 s by default, measured from the
// last response that did something, so neither concurrency nor the number
// of rounds shortens it), or on a non-throttling error. It then stops
// sending, cuts backoffs short, lets requests already in flight finish, and
// returns an *UnprocessedError holding exactly the entries not done, in
// input order, wrapping the cause. Entries of a request that failed are
// listed as not done although DynamoDB may have applied them; whole-item
// puts and deletes are idempotent, so sending them again is safe. Every
// goroutine has ended, and no request is in flight, when a call returns. A
// panic of the client or of a WriteSeq sequence stops the call the same way
// and is then raised again in the caller's goroutine, never in the engine's.
//
// # SDK client settings
//
// The SDK retries throttling itself (3 attempts by default, exponential
// backoff up to 20 s) before the engine sees an error, and its standard
// retryer draws every retry from a retry quota shared by all calls on the
// client (500 tokens, 5 per retry, 10 per timeout). Under sustained
// throttling many concurrent calls drain that quota and then every call on
// the client fails at once with a QuotaExceededError, whatever its own
// state. The engine already bounds its concurrency and backs off on its
// own, so give the client it uses no retry quota, and a modest number of
// attempts so that transient errors (HTTP 500, connection resets,
// truncated bodies) are still retried by the SDK:
//
//	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.Retryer = retry.NewStandard(dynashard.RetryForFanOut) // 5 attempts, no quota
//	})
//
// Stats reports requests, HTTP attempts (the SDK's retries included),
// retries, unprocessed rounds and the consumed capacity DynamoDB reports
// (the engine asks for ReturnConsumedCapacity TOTAL).
package batch
