package shard

import "github.com/dynashard/dynashard/internal/errs"

// Errors, matched with errors.Is. The three families are shared by every
// dynashard package: errors.Is(err, shard.ErrNotFound) and
// errors.Is(err, chunk.ErrNotFound) are the same test.
var (
	// ErrInvalid is matched by every error about input rejected before any
	// request: a bad layout, item, key or strategy, a nil argument.
	ErrInvalid = errs.Invalid
	// ErrNotFound reports that no item has the key asked for.
	ErrNotFound = errs.NotFound
	// ErrConflict reports a write whose condition failed, so that it was
	// not applied; the SDK's *types.ConditionalCheckFailedException is
	// wrapped with it. A conditional write whose condition failed only on
	// an SDK retry, after an attempt that may have been applied (a reset
	// connection, a timeout, a 5xx), cannot tell whether it failed on its
	// own result: it returns an error saying the outcome is unknown, which
	// does not match ErrConflict, as for any write cut off. A write that
	// is a transaction (see "Resharding" in the package doc) and gave up
	// after 12 attempts, the item moving each time or other transactions
	// conflicting with it, wrote nothing and matches no ErrConflict
	// either: its error wraps the last *types.TransactionCanceledException;
	// try again.
	ErrConflict = errs.Conflict

	// ErrInvalidLayout reports a Layout that cannot describe a table.
	ErrInvalidLayout = errs.New("shard: invalid layout", errs.Invalid)
	// ErrInvalidItem is matched by every *ItemError: an item or (base, id)
	// rejected before any request.
	ErrInvalidItem = errs.New("shard: invalid item", errs.Invalid)
	// ErrInvalidKey is matched by every *KeyError: a malformed physical key
	// or base (empty base, missing or non-canonical suffix, invalid UTF-8,
	// too long).
	ErrInvalidKey = errs.InvalidKey
	// ErrKeyTooLong is matched by a *KeyError for a key whose UTF-8 length,
	// suffix included, exceeds MaxKeyBytes.
	ErrKeyTooLong = errs.KeyTooLong
	// ErrItemTooLarge is matched by an *ItemError for an item over
	// DynamoDB's 400 KB (409,600-byte) limit, with the physical key in
	// place.
	ErrItemTooLarge = errs.New("shard: item too large", errs.Invalid)
	// ErrInvalidStrategy reports a nil strategy, a shard count outside
	// 1..MaxN, or a user-supplied Strategy that picked a suffix outside
	// 1..N.
	ErrInvalidStrategy = errs.InvalidStrategy
	// ErrNotCalculated reports an operation that must find an item by id
	// on a layout whose strategy is Random: such items are found only by
	// reading every suffix (package scatter).
	ErrNotCalculated = errs.New("shard: strategy does not derive the suffix from the id", errs.Invalid)

	// ErrLayoutMismatch is matched by a *LayoutError: the caller's Layout
	// differs from the one recorded for a base in anything but N (a base
	// keeps its own shard counts), or its key attributes are not the
	// table's. It is not ErrInvalid: the input may be fine and the
	// deployment wrong.
	ErrLayoutMismatch = errs.LayoutMismatch
)

// Errors of the layout record and of resharding.
var (
	// ErrMalformedRecord is matched by every error about a base's layout
	// record that dynashard did not write or that breaks its bounds (see
	// [IsRecord] for the format): a dynashard:layout that is not an S
	// starting with "v1 ", a history that is not a list of 1..MaxHistory
	// distinct counts in 1..MaxN, a revision that is not a number in
	// 0..2^53-1, a pending flag that is not a boolean or is set with
	// fewer than two counts. The error names the attribute and quotes at
	// most 64 bytes of a stored value. Nothing is read or written under
	// such a record. It is not ErrInvalid: the caller's input may be fine.
	ErrMalformedRecord = errs.MalformedRecord
	// ErrNoTransactions is matched by the error of a write, Get or
	// Rebalance that needs DynamoDB transactions (TransactWriteItems,
	// TransactGetItems) on a server without them, such as dynalite: an
	// item whose base's history has several counts is written and read
	// with transactions (see "Resharding" in the package doc), and
	// Reshard refuses to start on such a server.
	ErrNoTransactions = errs.New("shard: the server does not support DynamoDB transactions, which resharding needs", nil)
)

// ErrTooLate is matched by the error of a request that took longer than
// its fence. Every request made under a cached shard-count history must
// be done by the fence (see Layout.HistoryTTL and "Resharding" in the
// package doc); one still in flight then is abandoned. Like any request
// that ends without an answer, it may or may not have been applied, and
// retrying it is safe. The error names the fence, the table and the
// HistoryTTL the fence came from (the shorter of the Layout's and the
// base record's): a longer HistoryTTL gives each request longer (the
// record's changes with a Reshard, see "Across processes"). Load
// sends an abandoned item again under a fresh view.
var ErrTooLate = errs.New("shard: request abandoned: it took longer than the fence", nil)
