package shard

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/record"
)

// IsRecord reports whether item is a base's layout record rather than
// data: a Scan of a sharded table returns one record per base written,
// and code that scans should skip them. It decides by the record's key:
// item is a record if one of its attributes is an S value ending in
// "#dynashard" (the record's partition key; no physical key ends so) and
// every other attribute is the record's sort-key value or one of its own
// attributes (named "dynashard:…"). So it also recognises a record in a
// keys-only Scan, or in any projection that holds the partition key; an
// item projected without its partition key is not recognised.
//
// The record's format, below, is stable: it is format "v1", and a change
// would be a new format, not a new meaning of this one. A program in
// another language that shares a table with dynashard must follow it to
// read a base, and, to write one whose shard count may change (after a
// [Table.Reshard] or under a [Grower]), must also follow the rules of
// writing under it.
//
// Key. The record of base B is the item whose partition key (S) is
// B + "#dynashard", and, if the table has a sort key, whose sort-key value
// is "dynashard#layout" (S, or its UTF-8 bytes for B) or 0 (N).
//
// Attributes:
//
//	dynashard:layout   S     "v1 " and the layout as Layout.String writes
//	                         it without table name and N: pk=<name>, then
//	                         " sk=<name>:<S|N|B>" if there is a sort key,
//	                         then ` sep=<separator as a Go quoted string>
//	                         strategy=<hash|random|codepoint|the Go type of
//	                         a user's Strategy>`, e.g.
//	                         `v1 pk=pk sk=sk:S sep="." strategy=hash`; a
//	                         reader compares it as a string with its own
//	                         (any difference is a *LayoutError), and it
//	                         never changes
//	dynashard:shards   L     the base's shard-count history, oldest first:
//	                         1..MaxHistory distinct numbers (N), each in
//	                         1..MaxN; reads cover suffixes 1..max of it
//	dynashard:pending  BOOL  true while the last count is announced but not
//	                         yet the writers' (absent: false); true only
//	                         with two counts or more
//	dynashard:rev      N     the revision, below 2^53: 1 when the record is
//	                         written, one more at each update (absent: 0,
//	                         a record written before revisions)
//	dynashard:ttl      N     the base's HistoryTTL in milliseconds,
//	                         0..MaxHistoryTTL (0: no caching); absent in
//	                         a record written before it existed
//	dynashard:fence    N     the fence in milliseconds that its last
//	                         change asks every process to wait, at least
//	                         the fence of dynashard:ttl; present exactly
//	                         when dynashard:ttl is
//	dynashard:created  S     when the record was written (RFC 3339, UTC)
//	dynashard:changed  S     when it was last updated (RFC 3339, UTC)
//
// A record that breaks these bounds, or whose dynashard:layout does not
// start with "v1 ", is refused with an error matching ErrMalformedRecord,
// and nothing is read or written under it.
//
// Writing the record. It is created by a PutItem with the condition
// attribute_not_exists(<partition key>), holding the history [N], rev 1
// and created = changed; a writer whose put fails that condition reads
// the record another wrote and compares. Afterwards it changes only by an
// UpdateItem that sets dynashard:shards, dynashard:pending, dynashard:rev
// (to rev+1) and dynashard:changed, on the condition
// attribute_exists(dynashard:layout) AND dynashard:rev = <the rev read>
// (attribute_not_exists(dynashard:rev) for a record without one); no
// update writes a revision of 2^53 or more. The record is created with
// dynashard:ttl, the writer's HistoryTTL, and dynashard:fence, that
// HistoryTTL's fence (HistoryTTL plus max(HistoryTTL, 1 s)). Reshard
// appends a count as pending and sets dynashard:ttl to its own
// HistoryTTL, and dynashard:fence to the longer of the fences of the old
// and new HistoryTTL. A process trusts a record it read for the shorter
// of its own HistoryTTL and dynashard:ttl. Once a process has seen a
// count pending for the longer of its own fence and dynashard:fence, it
// may clear pending by such an update. Rebalance, when it has moved
// every item, sets the history to its newest count alone.
//
// Writing items. An item's partition key is B, the separator, and its
// suffix in canonical decimal ([Codec]); the suffix is the Strategy's pick
// for the item's id ([Hash] gives its formula) at a count of the history.
// Writers use the last count, or the one before it while pending is set,
// and reads try the key of every count. A writer reads the record again
// at least every HistoryTTL, and every request it makes from a reading
// must be done within the fence of that reading, or be abandoned. While
// the history has one count, items are written with plain requests. While
// it has several, a write of an item whose keys differ between the counts
// (a write by (base, id) through a calculated strategy) is one
// TransactWriteItems: the write at the writers' key, or in place at the
// key that holds the item with the extra condition
// attribute_exists(<partition key>) (an item is never created at an
// older key); and a ConditionCheck attribute_not_exists(<partition key>)
// at each other key. Every such Put and Update sets the item's hidden
// attribute dynashard:w (S) to a fresh random value of 16 lowercase hex
// characters (8 random bytes): Rebalance moves an item (a Put at the
// newest count's key, without dynashard:w, and a Delete at the old key,
// with a ConditionCheck that the record's dynashard:rev is the one the
// move was planned from) only if dynashard:w is still what it read (or
// still absent), so a write that left it unchanged could be undone by a
// move.
func IsRecord(item map[string]types.AttributeValue) bool { return record.Is(item) }
