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
// that processes racing with different layouts agree; it also keeps the
// shard counts the base was written with. A mismatch is a *[LayoutError]
// naming both layouts. The check costs one consistent GetItem per base and
// client in a process's life (a base never written costs it on every
// read), plus one PutItem the first time a base is written; a Layout with
// Unchecked set costs nothing and checks nothing, for tables written by
// other code. [IsRecord] tells a record from data in a Scan.
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
