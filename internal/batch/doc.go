// Package batch is dynashard's one way of writing and reading many items.
// WriteAll and WriteSeq send puts and deletes with BatchWriteItem. Get
// reads keys with BatchGetItem. Each returns only when every entry is done
// or the call gives up, and then it says exactly which entries are not
// done.
//
// # Model
//
// Entries are validated, then packed into requests, mixing tables freely.
// A write request holds at most 25 writes and 16 MB of JSON
// (MaxWritesPerRequest, MaxRequestBytes; sizes from ddbsize.WireSize,
// binary as base64). A read request holds at most 100 keys
// (MaxKeysPerRequest). Up to Options.MaxConcurrency requests are in flight
// or backing off at once. Their bodies total at most
// Options.MaxInFlightBytes.
//
// Entries DynamoDB returns in UnprocessedItems or UnprocessedKeys are
// matched back to what was sent, by key, numbers by value. They are folded
// into the next request ahead of fresh entries. So requests stay full,
// rather than trickling out a few leftovers at a time.
//
// Leftovers wait before they go out again, with full jitter: a random time
// in [0, d). Rounds belong to the whole engine, not to one request. A
// round ends at its first response in which nothing was done: every entry
// unprocessed, or a throttling error. That response adds one to a stall
// count and closes a gate that every worker waits at. Workers wait there
// whether they have leftovers or fresh entries to send. They wait a random
// time in [0, min(MaxDelay, BaseDelay·2^stalls)) (25 ms and 2 s by
// default).
//
// Responses to requests sent before the gate closed belong to the round
// that already ended and count nothing. So a call backs off as one client,
// however many requests it has in flight. Any response that does some of
// its entries resets the count and opens the gate. Its own leftovers then
// wait a random time in [0, BaseDelay).
//
// BatchGetItem also returns UnprocessedKeys merely because a response
// reached its size limit, with no throttling at all. The limit is about 16
// MB, or 1 MB from one partition in practice. Such a partial needs no wait.
// The engine tells it apart by a heuristic:
//
//   - A BatchGetItem partial that made progress (some keys were read) is
//     taken as size-driven. Its leftovers go out at once.
//   - One that read nothing is taken as throttling, and backs off.
//
// A partition throttled while others answer is thus retried without delay
// until only its keys are left. Then it backs off like any stalled round.
// BatchWriteItem leftovers always mean throttling, so writes always wait.
//
// # Per-key pacing
//
// DynamoDB's capacity belongs to partitions. So, for the engine, it belongs
// to partition-key values: one key can be out of capacity while the others
// have plenty. Left to itself, the engine would resend a throttled key's
// entries as fast as its backoff lets it. That wastes requests on entries
// DynamoDB returns again, and fills requests that other keys could use.
//
// So the engine learns the rate DynamoDB admits for each partition-key
// value of a table listed in Options.KeyAttributes. It sends that key's
// entries no faster than a little above it. Entries of tables without
// KeyAttributes are not paced.
//
// The estimate is a token bucket per key whose rate is measured rather than
// configured. A key is not paced until one of its entries comes back
// unprocessed, so a key never throttled costs nothing. From then on, its
// responses are counted in intervals of at least 200 ms of sending. Only
// requests sent during the interval count, over the time they were sent in.
//
//   - In an interval where some of its entries came back, the key was sent
//     more than its capacity. So what was admitted per second is its
//     capacity. The key is paced 25 % above it, lowered by at most a fifth
//     per interval. A key the client itself sent slowly for a while must
//     not lose its rate.
//   - In an interval where it waited for its pace and nothing came back,
//     its rate grows by a quarter, since its capacity may have grown.
//
// Pacing slightly above capacity keeps the key's partition busy at all
// times: the key is written at its capacity. The price is about one entry
// returned unprocessed per four written, instead of several per entry.
// Units are write capacity units (one per started KB of a Put, one per
// Delete), or one per key read. Throttling errors count like unprocessed
// entries. The consumed capacity DynamoDB reports (per table only) is not
// used per key.
//
// An entry whose key has no allowance waits in a queue of its key (a park),
// while entries of other keys go out. Requests take, in order:
//
//  1. leftovers of keys not paced;
//  2. parked entries whose keys may go, one key after another;
//  3. fresh entries.
//
// A key may always have one request in flight, whatever its estimate. So a
// key whose entries come back at random (not for capacity) is never slower
// than one request at a time. No key is paced below one unit per
// min(MaxDelay, StallTimeout/4). A request made only of paced entries waits
// up to 10 ms to be filled while other requests are in flight, so that
// pacing does not multiply small requests. Leftovers of a paced key wait in
// its park. The key is held back for the same full-jitter delay their
// worker would have slept, while the worker goes on with other keys.
//
// A response in which nothing was done, in a round where nothing else was
// done either (a stalled round, below), teaches nothing about its keys. The
// whole engine backs off instead, and after an outage every key resumes at
// the rate it had. Waiting for a pace is not a stall: a paced key that is
// admitted makes progress. StallTimeout counts from the last progress as
// before. So a permanent outage still ends in ErrStalled after
// StallTimeout.
//
// Memory stays bounded. WriteAll and Get park entries of their own input.
// WriteSeq parks at most Options.MaxWaiting entries (MaxWaitingBytes
// bytes), with those that wait for an earlier write of their key. It stops
// pulling while they are full. The state of a key is dropped, once there
// are 4,096 keys' worth, when nothing of it is parked or in flight.
//
// Errors the SDK returns after its own retries are of two kinds.
// ProvisionedThroughputExceededException, ThrottlingException and
// RequestLimitExceeded mean the whole request was not done. It is retried
// like a stalled round. Any other error fails the call.
//
// A client that wraps BatchWriteItem (Options.ClientObserves) may settle a
// request's entries itself, and say so with a *PartialError. The error
// lists the entries done, not done, and abandoned at a deadline of its
// own, their outcome unknown. Abandoned entries go out again at once. That
// is neither progress nor a stall: no backoff, no retry counted
// (Stats.Abandoned counts them).
//
// The call ends once nothing has been done for StallTimeout and entries
// were abandoned in two rounds at least, so that each had a second chance.
// Its error wraps the client's cause. The error matches ErrStalled too only if entries were left or throttled since the
// last progress.
//
// # Limits and validation
//
// Nothing is sent for a WriteAll or Get whose input is invalid. The
// *InputError names the entry by index, table and key. Input is invalid
// for:
//
//   - an item over 409,600 bytes (ddbsize's count, UTF-8);
//   - a value DynamoDB would refuse (bad number, empty set, NULL false, …);
//   - a missing, empty or oversized key value (2048 bytes partition, 1024
//     sort);
//   - both or neither of Put and Delete;
//   - two entries with the same key: DynamoDB would reject their whole
//     request.
//
// Keys are only fully checked for tables listed in Options.KeyAttributes;
// for other tables, see that field. WriteSeq validates as it pulls. It
// cannot remember a whole stream, so it orders rather than rejects repeated
// keys: a write waits until the earlier write of its key is done.
//
// # Failure
//
// A call ends early:
//
//   - when ctx is done;
//   - when Options.RetryBudget retries have been spent (ErrRetryBudget);
//   - when nothing has been done for Options.StallTimeout (ErrStalled; 10 s
//     by default). It is measured from the last response that did
//     something, so neither concurrency nor the number of rounds shortens
//     it.
//   - on a non-throttling error.
//
// It then stops sending, cuts backoffs short, and lets requests already in
// flight finish. It returns an *UnprocessedError holding exactly the
// entries not done, in input order, wrapping the cause.
//
// Entries of a request that ended without a clear answer are listed as not
// done, although DynamoDB may have applied them. They are marked so
// (UnprocessedError.MaybeDone). An entry not marked was not applied.
// Whole-item puts and deletes are idempotent, so sending them again is
// safe.
//
// Every goroutine has ended, and no request is in flight, when a call
// returns. A panic of the client, of Options.OnProgress or of a WriteSeq
// sequence stops the call the same way. It is then raised again in the
// caller's goroutine, never in the engine's.
//
// # SDK client settings
//
// The SDK retries throttling itself before the engine sees an error: 3
// attempts by default, exponential backoff up to 20 s. Its standard
// retryer draws every retry from a retry quota shared by all calls on the
// client: 500 tokens, 5 per retry, 10 per timeout. Under sustained
// throttling, many concurrent calls drain that quota. Then every call on
// the client fails at once with a QuotaExceededError, whatever its own
// state.
//
// The engine already bounds its concurrency and backs off on its own. So
// give the client it uses no retry quota. Give it a modest number of
// attempts, so that transient errors (HTTP 500, connection resets,
// truncated bodies) are still retried by the SDK:
//
//	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.Retryer = retry.NewStandard(dynashard.RetryForFanOut) // 5 attempts, no quota
//	})
//
// Stats reports requests, HTTP attempts (the SDK's retries included),
// retries and unprocessed rounds. Once the call has ended, it also reports
// the rates the call learned for the keys it paced. Consumed capacity is
// not in Stats. Every request goes through internal/observe's Do. Do asks
// DynamoDB for the capacity only when the call is observed: a
// dynashard.Usage in ctx, or a provider on the client. It then adds it,
// with the throttled attempts and unprocessed entries, to the call's Usage,
// spans and metrics.
package batch
