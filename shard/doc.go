// Package shard implements write sharding as the DynamoDB developer guide
// describes it: one hot logical partition key (a day, a status, a popular
// device) is spread over N physical keys base.1 … base.N so that writes reach
// many partitions instead of throttling one.
//
// # Model
//
// A [Strategy] picks the suffix 1..N for an item's id. [Random] spreads writes
// best but makes an item findable only by reading every suffix. [Hash] (the
// default calculated strategy) derives the suffix from the id with a fixed
// 64-bit hash, so a reader who knows the id computes the key and reads the
// item with one GetItem. [CodePointProduct] is the guide's own formula, kept
// exactly for tables already keyed that way; it piles typical ids onto
// suffix 1 (see its documentation) and must not be chosen for new data.
// [Analyze] measures how evenly a strategy spreads a sample of ids, and the
// dynashard command's "analyze" subcommand prints that side by side.
//
// Physical keys are "base" + separator + decimal suffix ([Key], [Parse],
// [Keys]; [Codec] for a separator other than "."). The suffix is canonical
// decimal, so every physical key has exactly one (base, suffix) reading.
//
// Package partition (github.com/dynashard/dynashard/partition) holds the
// guide's partition arithmetic and Recommend, which picks N for a hot key.
//
// A [Layout] describes one sharded table: its name, key attributes, strategy
// and codec. Every dynashard entry point is built from a Layout, and each
// checks it against the layout recorded for a base before its first data
// request ([Layout.Record] before writes, [Layout.Verify] before reads). The
// record is one item per base, at partition key base + "#dynashard" (never
// a physical key: those end in a digit), written with a conditional put so
// that processes racing with different layouts agree. A mismatch in
// anything but N is a *[LayoutError] naming both layouts. The check costs
// one consistent GetItem per base and client per [Layout.HistoryTTL] (a
// base never written costs it on every read), plus one PutItem the first
// time a base is written; a Layout with Unchecked set costs nothing and
// checks nothing, for tables written by other code. [IsRecord] tells a
// record from data in a Scan.
//
// # Resharding
//
// N is each base's own. The record keeps the base's history of shard
// counts, oldest first ([Layout.Shards]): a base starts with the Layout's
// N when it is first written (so the Layout's N is the default for new
// bases: re-planning tomorrow is a change of that N, and yesterday keeps
// its own), and [Layout.Reshard] (or a [Grower], under sustained
// throttling) appends a new count with a conditional update on the
// record's revision, so that concurrent writers and resharders agree.
// Writers always use the newest count; reads use every count: package
// scatter queries suffixes 1..max of the history, and [Table.Get] tries
// the newest count's key first, then the older ones'. With [Hash],
// doubling N keeps half of the items on their suffix, so a Get of an item
// written before the change costs 1.5 GetItems on average, one written
// after it costs 1. Each process caches a base's history for
// [Layout.HistoryTTL]: a writer acting on a stale history still writes
// under a count that is in the record, where every reader looks, so no
// item is lost; what it costs is that, for at most HistoryTTL after
// another process's Reshard, a reader in this process does not see the
// new shards (ConsistentRead reads the record every time). [Rebalance]
// moves the items to their newest-count suffix with put-then-delete
// (conditional puts never overwrite a newer version; a crash leaves two
// copies, which Get and scatter's ordered reads return once, and a re-run
// finishes), after waiting out HistoryTTL so that no writer still uses an
// older count, and then retires the older counts. The record's attributes
// are listed in record.go; its format is "v1".
//
// [Table] is typed access to a sharded table's items: Put, Get, Update and
// Delete by (base, id), and Load, a bulk loader that interleaves physical
// keys so consecutive BatchWriteItem requests hit different partitions (the
// guide's "distribute write activity during data upload"). Package repo
// builds an application repository on it (listing, caching, versions, large
// values); use Table for writes with your own conditions and bulk loads.
//
// # Limits it respects
//
// A partition-key value is at most 2,048 bytes and a sort-key value at most
// 1,024, measured after the suffix is appended; an item is at most 409,600
// bytes with its keys in place; N is at most [MaxN] (10,000) because reading
// a logical key costs one Query per suffix. All are checked before any
// request is sent.
//
// # How it fails
//
// Errors match one of the families every dynashard package shares:
// [ErrInvalid] (input rejected before any request: *[KeyError] matching
// [ErrInvalidKey] and [ErrKeyTooLong], *[ItemError] matching
// [ErrInvalidItem] and [ErrItemTooLarge], [ErrInvalidLayout],
// [ErrInvalidStrategy], [ErrNotCalculated]), [ErrNotFound] and
// [ErrConflict] (a failed condition, wrapping the SDK's
// *types.ConditionalCheckFailedException). [ErrLayoutMismatch] is apart:
// the input may be right and the deployment wrong. SDK errors are wrapped
// once with %w. Load returns exactly the items it could not write, each
// with its reason. Nothing panics on bad input: a strategy made with a bad
// shard count is refused by every entry point ([CheckN]), and a
// user-supplied Strategy is checked on every use, never trusted to produce
// an in-range suffix.
package shard
