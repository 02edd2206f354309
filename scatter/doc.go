// Package scatter reads one logical partition key of a write-sharded
// DynamoDB table as if it were one Query.
//
// # Model
//
// Write sharding (package shard) spreads the items of one hot logical key,
// the base, over N physical keys. For the day "2014-07-09" these are
// "2014-07-09.1" … "2014-07-09.N". Reading the day back means one Query per
// physical key and a merge, which the DynamoDB guide leaves to the
// application.
//
// A Scatter does it for the table one shard.Layout describes: table or
// index, partition key, sort key and its type, strategy, separator. It is
// the same value the writers use. N is each base's own. A base records the
// shard counts it was written with (shard.Table.Shards, changed by
// shard.Table.Reshard). Every call reads suffixes 1..max of that history:
// the union of every count's suffixes, each physical key once (see
// Resharding).
//
// Its calls:
//
//   - All queries every shard in parallel, each paginating through its
//     LastEvaluatedKey. It yields the items merged in DynamoDB's own
//     sort-key order. Strings sort by UTF-8 bytes, numbers by exact decimal
//     value (38 digits, 1E-130 to 9.99E+125), binary by unsigned bytes.
//     Items with equal sort keys come in suffix order. Descending reverses
//     everything, so a descending read is exactly the reverse of an
//     ascending one. With Options.Unordered, items stream as shards deliver
//     them.
//   - Page returns the next limit items and a Cursor. The Cursor resumes
//     exactly after the last item returned: no duplicate, no gap, same
//     order, also when items are written between pages (see Cursors). It
//     is stateless, for HTTP handlers.
//   - Count counts matches with Select COUNT.
//   - Lookup finds an item by its sort key when its suffix is unknown
//     (shard.Random). It sends BatchGetItem over the N candidate keys, in
//     ⌈N/100⌉ requests. N is the largest count of the base's history.
//
// In code, with the writers' layout:
//
//	s, err := scatter.New(client, layout)
//	…
//	for it, err := range s.All(ctx, "2014-07-09", func(o *scatter.Options) { o.Descending = true }) {
//		…
//	}
//
// Options describe what a call reads. They are set in New and changed per
// call with option functions applied to a copy, as the AWS SDK does. They
// hold:
//
//   - a sort-key condition, a filter and a projection, given as strings or
//     built with the SDK's expression package (WithExpression);
//   - the direction, the page size and consistency;
//   - a subset of the suffixes.
//
// A layout with an Index reads that secondary index. Its TableKey names the
// table's key, which resuming needs.
//
// The library names the physical partition key with placeholders of its
// own ("#dynashard_pk", ":dynashard_pk", …). It names the ranges it
// resumes shards with the same way. Caller placeholders with the prefixes
// "#dynashard_" and ":dynashard_" are rejected rather than silently
// overwritten.
//
// Items always carry the key attributes the merge and the cursor need, even
// when the projection leaves them out. They never carry the attributes
// package shard keeps for itself, whose names start with "dynashard:" (such
// as dynashard:w): every call drops them.
//
// # The layout check
//
// Writers through package shard record each base's layout in the table,
// in an item of its own that no read of data returns. Before the first
// data request for a base, every call checks the Scatter's layout against
// that record (shard.Table.Shards):
//
//   - A Scatter built with another separator, strategy or sort key fails
//     the call with a *shard.LayoutError (errors.Is(err,
//     shard.ErrLayoutMismatch)). It sends no Query or BatchGetItem, so it
//     never silently reads the wrong physical keys.
//   - A Scatter built with another N reads the base at its own recorded
//     history.
//
// The check costs one strongly consistent GetItem (one read unit) per base
// and process per shard.Layout.HistoryTTL (10 s by default). A match is
// cached with the base's history that long.
//
// A call may find the cached copy past half that age. It then uses the
// copy and reads the record again beside its own requests. The call waits
// for that read before it returns. So a base read at least every
// HistoryTTL / 2 never waits for its record, for one GetItem per
// HistoryTTL / 2.
//
// Under Options.ConsistentRead, the record is read on every call, before
// its requests. So a Reshard made by another process is seen at once. A
// base without a record (written by other code) is read as is, at the
// layout's N, and pays that GetItem on every call. A layout with Unchecked
// set sends no GetItem at all and is trusted, at its own N. Index layouts
// are always Unchecked.
//
// # Resharding
//
// A base grown from N to M (shard.Table.Reshard, or a shard.Grower) keeps
// its items where they were written. So a read covers suffixes 1..max of
// its history: All, Page, Count and Lookup see items written under every
// count. The merge, limits and cursors are unchanged. A cursor records no N
// (see Cursor), so one made before a Reshard resumes exactly after it. A
// Rebalance that shrinks a base retires suffixes. A cursor positioned in
// one is then rejected (CursorOutOfRange).
//
// Package shard stores each item once. But a read queries its suffixes at
// different times, and shard.Table.Rebalance moves items in between, each
// in one transaction. So a read may meet an item at its old key and, later,
// at its new key. While the history holds more than one count, every call
// returns such an item once.
//
// Under a calculated strategy, the sort key is the id: items with equal
// sort keys are one item. Under Random, equal sort keys may be distinct
// items. Only items equal in every attribute returned but the partition key
// are one. A Random Rebalance moves only the items of suffixes above the
// newest count. So a Random base whose newest count is its largest (one
// that grew) has nothing to merge, and its calls do nothing of the kind. A
// Filter applies to each sighting on its own. If it removes the newer one,
// the older one is returned.
//
// Each call does it its own way:
//
//   - An ordered All or Page meets an item's sightings among the items with
//     its sort key, and returns one. Under a calculated strategy, it
//     prefers the sighting at the newest count's suffix for the id, then
//     the next newest count's, and so on. Among equals, and under Random, it
//     returns the first.
//   - An Unordered All or Page remembers every item it meets. It drops one
//     it meets again, whichever sighting comes first (responses arrive in
//     any order). Under a calculated strategy it remembers the sort key.
//     Under Random it remembers the sort key and a 64-bit digest of the
//     attributes.
//   - Each item an Unordered call remembers costs a Go map entry: 35 to 55
//     bytes plus its sort key (70 to 105 under Random). That was measured
//     with 10^5 to 1.5 × 10^6 entries. So such a call holds memory in
//     proportion to its result, not only its pages. A call over one count,
//     or a Random base that grew, remembers nothing.
//   - Count reads the items through the ordered merge instead of Select
//     COUNT, for the same read units and more bytes. It reads their keys
//     only under a calculated strategy, and whole items under Random.
//   - Lookup returns one item under a calculated strategy, chosen as the
//     ordered merge does (the first in suffix order). Under Random it drops
//     an item above the newest count that equals one at or below it.
//
// That holds for each call. A walk of Pages is several calls. An ordered
// walk does not repeat an item, but for two rare cases (see Cursors). Each
// Page resumes after the key of the last item returned, and its cursor
// names that item in case it moved.
//
// An Unordered walk resumes each shard where that shard stopped. A
// Rebalance may move an item between two of its Pages, from a shard read
// past it to one not read that far. The item is then returned again.
//
// Reads are not snapshots either. A call may miss an item that a move takes
// from a shard it has not read that far to one it has. A later read finds
// it. Once Rebalance has retired the older counts, nothing moves. A read of
// an index (Layout.Index) merges nothing, since an index's sort keys name no
// item.
//
// # Concurrency and memory
//
// One call keeps at most Options.MaxConcurrency requests in flight, by
// default min(N, 32). Each shard has at most one request in flight and at
// most two pages in memory:
//
//   - the page being merged, less the items already returned (a page does
//     not keep them);
//   - the next one, fetched ahead while the first drains.
//
// The ordered merge needs the next item of every shard before it can
// return one, so the slowest shard sets its pace. Unordered does not wait.
//
// Pages grow. At the default PageSize, All (ordered or not) asks each
// shard's first Query for 100 items (DynamoDB's Limit). Each later Query
// asks for 4 times as many as the one before, up to max(256, 32,768 / N)
// items. For example:
//
//   - at N = 200, pages of 100, 256, 256, …;
//   - at N = 32, 100, 400, 1,024, 1,024, …;
//   - at N = 8, 100, 400, 1,600, 4,096, ….
//
// The merge returns its first item once every shard's first page is in.
// That takes ⌈N / MaxConcurrency⌉ rounds of small Queries, rather than
// every shard's whole first megabyte. Later pages are large enough that a
// large result costs few more Queries than whole pages would. For 200
// shards of 1,000 items, that is 5 Queries a shard instead of 1.
//
// A shard's pages come one after another. With few shards, round trips
// rather than the server set the pace. There a large shard costs a few
// round trips more than whole pages: at N = 2, 3 for a shard of 1,000
// items instead of 1. Set PageSize for such reads.
//
// As a shard holds at most two pages, a call holds at most 2 × max(32,768,
// 256 × N) items. It holds at most 2 MB per shard (DynamoDB caps a page at
// 1 MB), whatever the result size. That is 102,400 items at N = 200, and
// 65,536 at N ≤ 128. Multiply by the item size to get bytes. The SDK's
// decoded form of an item takes a few times its DynamoDB size.
//
// An Unordered call over a history of several counts also remembers each
// item it returns, about 50 bytes plus its sort key (see Resharding). A
// shard of fewer than 100 items still costs one Query.
//
// Options.PageSize replaces the growth. Every Query then asks for PageSize
// items, and a call holds at most N × 2 × PageSize items. With a Filter,
// DynamoDB counts the Limit before filtering. So small pages would multiply
// the Queries a selective filter needs. A filtered All therefore asks for
// DynamoDB's 1 MB page throughout, and holds at most N × 2 MB.
//
// Page asks each shard for at most one item more than it still needs. It
// fetches ahead only when a shard may have to contribute more than its
// current page. So a small page costs about one small request per shard,
// and a Page holds at most N × 2 × (limit + 1) items.
//
// Requests start without a dispatcher goroutine: at once while fewer than
// MaxConcurrency are in flight, else as earlier ones finish. Nothing is
// sent before the first iteration of All, not even the layout check.
// Breaking out of the loop or cancelling the context cancels the requests
// in flight and waits for them. So no goroutine outlives a call.
//
// # What a page costs
//
// An exact page reads every shard. A Page is N Queries, plus the layout
// check's read about once per HistoryTTL / 2. DynamoDB charges each Query
// at least half a read unit (one with ConsistentRead), whatever it returns.
// So a page of 50 small items costs at least N/2 read units. One Query of
// an unsharded key costs about 0.5. At N = 200 the page costs 100 or more:
// 110 measured on DynamoDB Local.
//
// That is the price of exact pages that see live writes. A hand-written
// errgroup of Queries pays it too. It is what the write headroom of N buys.
// Package partition's Recommend states both for a workload, and so does
// `dynashard plan`. Choose the smallest N that carries the writes.
// shard.GrowOptions.ShrinkBelow makes the Grower recommend a smaller N for
// a base that no longer needs it.
//
// # When DynamoDB throttles
//
// All, Page and Count back off their requests in flight when DynamoDB
// throttles them, as the guide asks ("avoid sudden bursts of read
// activity"). The SDK's retryer retries a throttled request by itself. So a
// fan-out sees throttling in two ways:
//
//   - a request that fails with ProvisionedThroughputExceededException,
//     ThrottlingException, RequestLimitExceeded or a like error, once the
//     retries are spent;
//   - a request that succeeds after the retryer retried such an error. The
//     retryer records every attempt in the response's metadata, where the
//     fan-out reads it.
//
// Either halves the call's limit on requests in flight, down to 1, at most
// once per round. A request sent before the last cut that comes back
// throttled does not cut again, since it went out at the old rate. Every
// answered request that met no throttle adds 1/limit to the limit. So the
// limit grows by about one per round of successful requests, up to
// MaxConcurrency.
//
// Requests held back wait in the call's queue, in order, and start as
// earlier ones come back. Nothing is dropped, so every item is still
// returned exactly once, and ctx still ends the call. Without throttling,
// the limit stays at MaxConcurrency and a call runs as before.
//
// The first call of a Scatter starts at MaxConcurrency, not lower. A slow
// start would cost every unthrottled read the rounds it takes to grow.
// MaxConcurrency is the bound to set for a table that must not see N
// requests at once.
//
// The Scatter keeps the limit a call ends with. The next call of All, Page
// or Count starts there instead of at MaxConcurrency. (A call with a lower
// MaxConcurrency starts at that.) So a handler paging with Page, or a read
// right after a throttled one, does not send a full burst into a table
// that is still throttling. Once a call has grown back to its
// MaxConcurrency, calls start there again.
//
// Stats reports the throttled requests (Throttled), the cuts (Backoffs),
// the lowest limit reached (MinConcurrencyLimit) and where the next call
// starts (ConcurrencyLimit). Lookup's BatchGetItem requests are paced by
// the batch engine: unprocessed keys are resent with backoff.
//
// # Cursors
//
// A cursor records a position in the merged order: the last item Page
// returned, as its suffix and its key. The key is the sort key and, for an
// index, the table's key too. The next Page behaves as one Query over the
// merged key, resumed after that item. It returns what follows the item in
// merged order when it reads, whichever shard holds it, and nothing that
// precedes it.
//
// So every shard resumes from the same place: from the item's sort key on.
// That includes items with exactly that key in shards after the item's
// suffix (before it when descending). It excludes them in the others and in
// the item's own shard.
//
// DynamoDB's ExclusiveStartKey cannot say "inclusive". So the library
// writes that range into the key condition, intersected with the query's
// own. A begins_with becomes a range up to the largest 1,024-byte key with
// that prefix. BETWEEN includes both ends, so an excluded end is read and
// its items (one per shard on a table) are dropped.
//
// An index's keys repeat within a shard. So an index resumes the item's
// own shard with ExclusiveStartKey, which orders equal index keys. In
// another shard, an excluded run of equal index keys is re-read and
// dropped when the KeyCondition's far bound forces BETWEEN.
//
// A Rebalance may move the item a cursor stopped at to a shard that reads
// its sort key inclusively. So the cursor also names its item, and the
// next Page drops it there:
//
//   - Under a calculated strategy the sort key names it, once the base is
//     known to follow package shard's protocol. A history of several
//     counts, or of one count other than the layout's N, shows that. A
//     base without a record is read at the layout's N. A cursor carries
//     what the Page that made it knew.
//   - Otherwise the cursor holds a 64-bit digest of the item's attributes
//     but the partition key, as returned. A moved item with its sort key
//     and digest is dropped. A write of the item, or another Projection,
//     changes the digest.
//
// So a cursor made and used at the layout's N may return its item again.
// That happens if, meanwhile, the base was resharded and brought back to
// N, and the item written and moved. Under Random the digest names the last item
// only. A Page that ends among several items with one sort key may let the
// next Page return one of the others again, if it moved. Reads of an index
// always use the digest.
//
// Under live writes, therefore, concatenated pages stay in order and never
// repeat an item, but for the moves above. An item written between pages
// appears exactly when it sorts after the position at the time the next
// Page reads its shard. Reads are read-committed per item, never a
// snapshot. The empty Cursor ends a walk; items written later need a walk
// of their own.
//
// Three cases give a shard a position of its own in the cursor, with its
// own semantics:
//
//   - Under Options.Unordered, each shard resumes after the last item it
//     returned.
//   - A shard that failed under Options.Partial resumes where it stood. So
//     its items come late, ordered within each page only.
//   - A Page stopped by Options.MaxShardPages records how far each shard
//     read past items its filter removed. So no stretch is read twice,
//     which misses items written into such a stretch afterwards. Without
//     MaxShardPages, a stretch read past is read again by the next Page.
//
// Page knows whether anything follows without an extra request in the
// common case. Each shard is asked for one item more than the page still
// needs, so a page that takes the last items returns the empty Cursor.
// Only a shard whose page ended just where the merge stopped gets one more
// request, for one item. Its page was cut by PageSize or by DynamoDB's 1
// MB, or emptied by the filter. If the filter removes that one item, the
// cursor stays, and the next Page returns no items and the empty Cursor.
//
// A cursor is base64url text of a versioned binary encoding. It takes 20
// bytes (52 when signed, 8 more with a digest) plus the position. The
// position is about 2 bytes and, per key attribute, its value and 2 bytes.
// Each shard with a position of its own adds a suffix and a position.
//
// A cursor is bound to a fingerprint of:
//
//   - the layout (table, index, key attributes, strategy kind, separator;
//     not N);
//   - the base;
//   - the sort-key condition and the filter, with their names and values;
//   - the direction;
//   - a suffix set named by Options.Suffixes.
//
// Page rejects a cursor made for anything else, before sending a request,
// with a *CursorError (ErrInvalidCursor). It rejects any garbled, truncated
// or out-of-range cursor the same way. The one exception is a position in
// a suffix the base no longer has, because a shrinking
// shard.Table.Rebalance retired it. Only the layout check can tell that.
//
// Out-of-range includes a position DynamoDB would refuse:
//
//   - a sort key of another type than the layout's SortKeyType;
//   - values of one attribute of different types;
//   - a value longer than DynamoDB's limits (1,024 bytes for a sort key,
//     2,048 for a partition key);
//   - a sort key outside the KeyCondition, evaluated locally in DynamoDB's
//     order.
//
// An index layout declares no types for the table's key attributes. So a
// forged unsigned cursor with a consistently wrong type there fails at
// DynamoDB, as a *ShardError wrapping a ValidationException. Projection,
// page size, consistency, Unordered and Unchecked may change between pages.
//
// With Options.CursorKey (at least 16 bytes, 32 random bytes recommended),
// cursors are signed with HMAC-SHA256, so a client cannot forge a position.
// Without it, a cursor is tamper-evident only in its structure, binding and
// range.
//
// # Limits
//
//   - DynamoDB reads at most 1 MB per Query page before filtering, so a
//     page may come back empty yet continue. Options.PageSize (DynamoDB's
//     Limit) also counts items before filtering.
//   - A filter that removes nearly everything can make Page read many pages
//     per shard before it has limit items. Options.MaxShardPages bounds
//     that. Page then returns fewer items (even none) with a cursor that
//     has advanced. (DynamoDB Local ignores the 1 MB page size when a
//     filter is present; real DynamoDB and dynalite do not.)
//   - BatchGetItem, used by Lookup, reads at most 100 keys per request and
//     may leave keys unprocessed. The internal batch engine retries them
//     with capped exponential backoff.
//   - BatchGetItem reads no index and applies no filter. So Lookup accepts
//     neither, nor an index layout.
//   - Strongly consistent reads are not available on global secondary
//     indexes.
//   - Physical keys are limited to 2,048 bytes including the suffix,
//     checked before any request.
//
// # Failure modes
//
// By default, the first failing shard cancels the others. The call returns
// a *ShardError naming the suffix and wrapping the SDK's error. So
// errors.As finds both the *ShardError and, say, a
// *types.ProvisionedThroughputExceededException.
//
// With Options.Partial, the call goes on with the healthy shards. It ends
// with a *PartialError listing the failed ones. The result is then
// incomplete. The cursor Page returns retries the failed shards from where
// they stood. A cancelled context ends a call with the context's error.
//
// Before any data request, the layout check may fail a call:
//
//   - a layout that differs from the base's record, or whose key attributes
//     are not the table's, fails with a *shard.LayoutError;
//   - a record that dynashard did not write fails with an error matching
//     shard.ErrMalformedRecord;
//   - a failed read of the record fails with the SDK's error, wrapped once.
//
// Input is checked before any request, and nothing panics on it:
//
//   - New rejects a nil client, an invalid Layout and invalid Options.
//   - Every call rejects a nil context, a zero Scatter, invalid Options
//     after its option functions, and an empty or too long base. The error
//     matches ErrInvalidQuery.
//   - Page rejects a bad cursor with a *CursorError (ErrInvalidCursor).
//
// Both match ErrInvalid, the family every dynashard package shares. A panic
// inside the client is raised again in the caller's goroutine, where it can
// be recovered, once every request goroutine has ended.
//
// # Client settings for a fan-out
//
// Every request of a Scatter goes through one SDK client. The SDK's
// standard retryer shares one retry-quota token bucket per client: 500
// tokens, 5 taken per retry and 10 per timeout, 1 returned per success.
// Under throttling, a few dozen goroutines retrying at once empty it within
// a second. After that, every request on that client fails at once with
// "failed to get rate limit token, retry quota exceeded" (aws-sdk-go-v2
// issues #1665 and #3413). That includes requests of unrelated code.
//
// This package bounds its own concurrency for that reason. For a client
// used for fan-out reads, we recommend turning the quota off and keeping
// retries. A throttled or truncated response (which the retryer also
// covers) is normal at this scale. dynashard.RetryForFanOut does both:
//
//	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
//		o.Retryer = retry.NewStandard(dynashard.RetryForFanOut) // 5 attempts, no quota
//		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
//			tr.MaxIdleConnsPerHost = 64 // ≥ MaxConcurrency; the SDK keeps 10
//		})
//	})
//
// Here retry is github.com/aws/aws-sdk-go-v2/aws/retry, and awshttp is
// .../aws/transport/http. Use Options.MaxConcurrency to share a table's
// capacity with other work. A scatter over N shards reads N partitions at
// once, which is its purpose. But it also multiplies the read rate of one
// logical query by up to MaxConcurrency.
package scatter
