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
// [Table] is typed access to a sharded table: Put, Get, Update and Delete by
// (base, id), and Load, a bulk loader that interleaves physical keys so
// consecutive BatchWriteItem requests hit different partitions (the guide's
// "distribute write activity during data upload").
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
// Invalid keys are *[KeyError] (matching [ErrBadKey], [ErrKeyTooLong]);
// invalid items are *[ItemError] (matching [ErrBadItem], [ErrItemTooLarge])
// naming the table, base and id; no request is sent for them. SDK errors are
// wrapped once with %w, so errors.As finds the SDK's typed errors (e.g.
// *types.ConditionalCheckFailedException). Load returns exactly the items it
// could not write, each with its reason. Strategy constructors panic on a
// shard count outside 1..MaxN (a programming error, like a negative slice
// length); use [CheckN] for counts that arrive at run time. A user-supplied
// Strategy is checked on every use and reported as [ErrBadStrategy], never
// trusted to produce an in-range suffix.
package shard
