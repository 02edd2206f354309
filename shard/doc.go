// Package shard implements write sharding as the DynamoDB developer guide
// describes it. One hot logical partition key (a day, a status, a popular
// device) is spread over N physical keys base.1 … base.N. So writes reach
// many partitions instead of throttling one.
//
// # Model
//
// A [Strategy] picks the suffix 1..N for an item's id:
//
//   - [Random] spreads writes best, but makes an item findable only by
//     reading every suffix.
//   - [Hash] (the default calculated strategy) derives the suffix from the
//     id with a fixed 64-bit hash. A reader who knows the id computes the
//     key and reads the item with one GetItem.
//   - [CodePointProduct] is the guide's own formula, kept exactly for
//     tables already keyed that way. It piles typical ids onto suffix 1
//     (see its documentation) and must not be chosen for new data.
//
// The dynashard command's "analyze" subcommand measures how evenly each
// strategy spreads a sample of your ids, side by side.
//
// Physical keys are "base" + separator + decimal suffix ([Key], [Parse],
// [Keys]; [Codec] for a separator other than "."). The suffix is canonical
// decimal, so every physical key has exactly one (base, suffix) reading.
//
// Package partition (github.com/dynashard/dynashard/partition) holds the
// guide's partition arithmetic. Its Recommend picks N for a hot key.
//
// A [Layout] describes one sharded table: its name, key attributes,
// strategy and codec. Every dynashard entry point is built from a Layout.
// Each checks it against the layout recorded for a base before its first
// data request (see [Table.Shards]). The first write to a base writes the
// record.
//
// The record is one item per base, at partition key base + "#dynashard".
// That is never a physical key: those end in a digit. It is written with a
// conditional put, so that processes racing with different layouts agree.
// A mismatch in anything but N is a *[LayoutError] naming both layouts.
//
// The check costs one consistent GetItem per base and process per
// [Layout.HistoryTTL]. A base never written costs it on every read. The
// first write of a base adds one PutItem. A Layout with Unchecked set costs
// nothing and checks nothing, for tables written by other code. [IsRecord]
// tells a record from data in a Scan.
//
// # Resharding
//
// N is each base's own. The record keeps the base's history of shard
// counts, oldest first ([Table.Shards]). A base starts with the Layout's N
// when it is first written, so the Layout's N is the default for new bases.
// [Table.Reshard] (or a [Grower], under sustained throttling) appends a new
// count. Reads cover every count. Package scatter queries suffixes 1..max
// of the history. [Table.Get] reads every key the history gives the id.
//
// The protocol keeps every per-item operation linearizable while counts
// change:
//
//   - Views and the fence. Each process caches a base's record for at most
//     the base's HistoryTTL (see "Across processes"). The cache is per
//     process, database, table and base, whatever client reads it. Every
//     request made from a cached view must be done by the fence. The fence
//     is HistoryTTL plus the longest a request may be in flight,
//     max(HistoryTTL, 1 s). A request still running then is abandoned with
//     [ErrTooLate]. Its outcome is unknown, like any request cut off; Load
//     sends it again under a fresh view. So no process acts on a record
//     older than the fence.
//   - Two steps. Reshard first records the new count as pending. From then
//     on, every reader covers its suffixes, and writers still write new
//     items under the old count. Only a fence later does the count become
//     the writers'. By then no process can still write without knowing of
//     the new count. Reshard waits for that; the Grower does not. The
//     base's writers make the change themselves, once the fence has passed
//     since they first received the new count. That moment is the answer
//     of a read that showed it. It is never the moment such a read was
//     sent, which may precede the announcement.
//   - One copy. While the history gives an id several physical keys, every
//     write of the item is one TransactWriteItems. That covers Put, Update
//     and Delete, with or without a condition, and each Load item. The
//     transaction holds the write at the key that holds the item, or at
//     the writers' key if none does. (A write never creates an item at an
//     older key.) It also holds a ConditionCheck that no other key holds
//     the item. The transaction fails as a whole if the item is elsewhere,
//     and the write follows it there. So an item has at most one copy, a
//     condition is tested on that copy, and a write never moves an item.
//     Such writes set the hidden attribute dynashard:w (16 hex characters)
//     to a fresh value.
//   - Moves. Only [Table.Rebalance] moves items, each with one transaction.
//     The transaction holds a Put at the newest count's key if nothing is
//     there, and a Delete at the old key if the item's dynashard:w is
//     unchanged. It also holds a ConditionCheck that the record is still at
//     the revision the move was planned from. Rebalance first waits a
//     fence, so that no process still writes under the count before the
//     newest. It then retires the older counts with a conditional update of
//     the record. A move planned from a record that has changed since
//     (another Rebalance, a Reshard) fails as a whole. Rebalance then reads
//     the record and plans again. So a paused or slow Rebalance never moves
//     an item to a key that the base's history no longer covers. A
//     Rebalance stopped at any point leaves every item in one place; a
//     re-run finishes.
//   - Reads. A consistent Get of an id with several keys is one
//     TransactGetItems over them: a snapshot in which the item has one
//     copy. An eventually consistent Get tries the keys one GetItem at a
//     time, newest count first. It confirms a miss with a
//     TransactGetItems, so it never misses an item that exists.
//   - Large values. A repo.Repo's large value is stored through a chunk
//     store. The store's requests on the item itself (read, switch, delete)
//     are these reads and writes. So its switch is one such write, and its
//     version check runs on the one copy. Its chunks are named after the
//     item's logical key (base and id), not its physical key, so a move
//     keeps them the item's.
//   - Cursors. A scatter cursor resumes after its own item, also when a
//     Rebalance has moved that item to a shard the merge reads later.
//
// # Across processes
//
// A deployment is many processes, each with its own client, settings and
// pauses. What they must agree on is in the base's record, not in their
// options:
//
//   - The record holds the base's HistoryTTL (dynashard:ttl) and the fence
//     its last change asks for (dynashard:fence). The first process to
//     write the record sets them from its Layout. Each Reshard's
//     announcement sets the HistoryTTL to the resharder's. It sets the
//     fence to the longer of the old and new HistoryTTL's fences. To change
//     a base's HistoryTTL, Reshard it with a Layout that has the new one.
//   - A process trusts a view for the shorter of its own HistoryTTL and the
//     record's, and its requests' deadlines follow. Before it acts on a
//     change, it waits the longer of its own fence and the record's. Acting
//     on a change means activating a pending count, or sweeping in
//     Rebalance.
//   - A move is conditioned on the record's revision (see Moves above).
//   - Each change of the record is a conditional update on its revision,
//     which stays below 2^53. A change that would pass it is refused, and
//     the record stays readable.
//
// So processes may differ in HistoryTTL, Grower settings, retry settings
// and MaxConcurrency, and may pause for any time. A request whose deadline
// passes while its process is paused is abandoned, if it was not sent yet.
// A stale move fails on the record's revision. Processes must agree on the
// rest of the Layout; a *[LayoutError] says when they do not. They must
// agree on Options.ExactlyOnce too, if they need its guarantee.
//
// The history cache is per database. Two clients that resolve the same
// endpoint, region and account share it, and see each other's Reshard at
// once. Two tables that share only a name never share a history.
//
// Two things stay outside:
//
//   - Each process's clock must run at the speed of real time. Its waits
//     and deadlines are measured on its own clock.
//   - A write sent before its deadline must reach DynamoDB and be applied
//     within the fence. A process paused in the instant between its last
//     check and the request leaving it is as a slow network.
//
// Why the races of plain put-then-delete moves cannot happen:
//
//   - A write in flight across a Rebalance is fenced: it lands before the
//     sweep starts, or fails.
//   - A Delete and a concurrent write both act on the one copy, in
//     transactions that DynamoDB serializes.
//   - A Rebalance moves only the copy it read (dynashard:w unchanged), so
//     it never keeps an older value.
//   - A stale writer cannot put a second copy beside a newer one. New keys
//     are written only after the fence, and every multi-key write checks
//     the other keys.
//
// Some items' keys coincide under every count of the history: with Hash,
// 1/k of a base's items when N is multiplied by k. Such an item is read and
// written with plain requests, as with one count.
//
// Costs follow DynamoDB's pricing: 2 write units per started KB for each
// action of a transaction, a ConditionCheck included. While a base's
// history has several counts:
//
//   - A write of an item of up to 1 KB whose keys differ costs 2 units for
//     the write, plus 2 per other key checked. With two counts that is 4
//     units, against 1 for a plain PutItem.
//   - A write that finds the item at an older key costs that twice.
//   - A consistent Get costs one TransactGetItems: 2 read units per started
//     4 KB of each key's item, 2 for a key that holds none.
//   - A move costs 4 units per started KB of the item.
//
// DynamoDB Local 1.25.1 reports 4 units per started KB for each action of a
// transaction, and adds actions of equal units only once. It reports 4 for
// a write of up to 1 KB with one or two checks. It reports 12 for a 1.5 KB
// one with a check (DynamoDB: 6). It reports 4 for a one-action
// transaction of up to 1 KB (DynamoDB: 2).
//
// With one count nothing changes: one plain request, no hidden attribute.
// Transactions need a server that has them. On dynalite, Reshard fails with
// [ErrNoTransactions] before changing anything. Every other operation works
// on a base whose history has one count. Each process reads a base's record
// once per HistoryTTL. Package scatter reads it again ahead, once past
// HistoryTTL / 2.
//
// What stays outside the guarantee:
//
//   - The SDK may retry a plain (non-transactional) write after an attempt
//     that was applied but whose answer was lost. The write then applies
//     twice, as with any DynamoDB client. A Delete of the item between the
//     two attempts is undone by the second. DynamoDB's plain writes are
//     at-least-once under retries. A transaction carries one
//     ClientRequestToken for every attempt and is exactly-once.
//     Options.ExactlyOnce closes that gap for Put, Update and Delete, at a
//     transaction's cost. Load's batches stay at-least-once.
//   - Scatter reads are Queries, not snapshots. One call that overlaps a
//     Rebalance never returns an item twice. But it may miss an item moved
//     during it between two suffixes. The item is not lost: a later read
//     finds it. An Unordered walk of Pages may return an item again on a
//     later Page if it moved between them (see package scatter).
//   - An Update while the history gives its id several keys returns the
//     item as read right after the update. That includes a concurrent
//     write that came between.
//   - The fence assumes that DynamoDB applies a request it has received
//     within the fence. A request it holds longer could land after the
//     next change of counts.
//
// The record's key and attributes are a stable format ("v1"). So are the
// rules for writing a base's items while its history has several counts.
// [IsRecord] documents them for programs in other languages.
//
// [Table] is typed access to a sharded table's items. It offers Put, Get,
// Update and Delete by (base, id), and Load, a bulk loader. Load
// interleaves physical keys, so consecutive BatchWriteItem requests hit
// different partitions: the guide's "distribute write activity during data
// upload". Package repo builds an application repository on Table
// (listing, caching, versions, large values). Use Table for writes with
// your own conditions and for bulk loads.
//
// # What a call costs
//
// Every method of a [Table] that sends requests is one logical call. Give
// it a context made by dynashard.WithUsage. Then each request the call
// sends adds what DynamoDB reported to the Usage: capacity units per
// table, the request, its throttled attempts and the batch entries returned
// unprocessed. That includes the requests made on the call's behalf:
//
//   - the layout record's reads and writes. A base's first write reads its
//     absent record (1 read unit) and writes it (1 write unit). A process
//     then reads it once per HistoryTTL, and a consistent Get every time,
//     1 read unit each.
//   - a Load's retries and transactions;
//   - a Grower's Reshard.
//
// Without a Usage (and without providers), nothing asks DynamoDB for its
// consumed capacity, and nothing is allocated for it. Asking costs time: a
// read of a large day through DynamoDB Local took 1.14× as long with it
// (see the README).
//
// If the SDK client has a TracerProvider, each call is a span named
// dynashard.shard.<Method>: Put, Get, Update, Delete, Load, Reshard,
// Shards, Rebalance. A Grower's grow is Grow, inside the write that decided
// it. The span carries the table, the base, the history it acted under and
// the request totals. With a MeterProvider, each call records the call
// metrics and shard's own:
//
//   - layout-record reads;
//   - Grower decisions;
//   - items a Rebalance moved;
//   - the keys a Load's batch engine paced, with the rates it learned for
//     them.
//
// # Limits it respects
//
//   - A partition-key value is at most 2,048 bytes and a sort-key value at
//     most 1,024, measured after the suffix is appended.
//   - A base of a checked layout is at most 2,038 bytes, since its record's
//     partition key is the base and "#dynashard" (ErrKeyTooLong).
//   - An item is at most 409,600 bytes with its keys in place.
//   - N is at most [MaxN] (10,000), because reading a logical key costs one
//     Query per suffix.
//
// All are checked before any request is sent.
//
// # How it fails
//
// Errors match one of the families every dynashard package shares:
//
//   - [ErrInvalid]: input rejected before any request. Its members are
//     *[KeyError] matching [ErrInvalidKey] and [ErrKeyTooLong], *[ItemError]
//     matching [ErrInvalidItem] and [ErrItemTooLarge], [ErrInvalidLayout],
//     [ErrInvalidStrategy] and [ErrNotCalculated].
//   - [ErrNotFound].
//   - [ErrConflict]: a failed condition, wrapping the SDK's
//     *types.ConditionalCheckFailedException.
//
// [ErrLayoutMismatch], [ErrMalformedRecord], [ErrNoTransactions] and
// [ErrTooLate] are apart: the input may be right and the deployment or the
// moment wrong. SDK errors are wrapped once with %w. Load returns exactly
// the items it could not write, each with its reason.
//
// Nothing panics on bad input. Every entry point refuses a strategy made
// with a bad shard count ([CheckN]). A user-supplied Strategy is checked on
// every use, never trusted to produce an in-range suffix.
package shard
