package chunk

import (
	"fmt"

	"github.com/dynashard/dynashard/internal/errs"
)

// Errors, matched with errors.Is. Errors from this package wrap at most one
// of them, together with the key and whatever caused it. The three families
// are shared by every dynashard package: errors.Is(err, chunk.ErrNotFound)
// and errors.Is(err, shard.ErrNotFound) are the same test, and each of the
// package's own sentinels below matches its family too (ErrTooLarge matches
// ErrInvalid).
var (
	// ErrInvalid is matched by every error about input rejected before any
	// request: a nil client or ctx, an empty table name or an option New
	// cannot take, a nil or typed-nil reader or attribute value, an
	// invalid key (ErrInvalidKey), a payload or parent item too large
	// (ErrTooLarge), a reserved attribute name (ErrReserved). The error
	// names the input.
	ErrInvalid = errs.Invalid

	// ErrNotFound reports that the parent item does not exist or holds no
	// payload (from Get, Open, Stat and Resolve; never from Delete, which
	// succeeds on an absent item).
	ErrNotFound = errs.NotFound

	// ErrConflict reports a concurrent write that changed the item first.
	// From Put it means this Put's version never became current and never
	// will (its chunks were removed); from a streaming read, that the
	// version being read was replaced and its chunks deleted before the
	// read finished; from Delete, that writers kept replacing the item for
	// every attempt.
	ErrConflict = errs.Conflict

	// ErrInvalidKey reports a parent key DynamoDB would reject, or one too
	// long to be extended by "#<version>#<seq>" within the 2,048-byte limit
	// of a chunk key. It matches ErrInvalid.
	ErrInvalidKey = errs.New("chunk: invalid key", errs.Invalid)

	// ErrTooLarge reports a payload above Options.MaxSize, or a parent
	// item whose caller attributes and inline payload exceed DynamoDB's
	// item limit. It matches ErrInvalid.
	ErrTooLarge = errs.New("chunk: too large", errs.Invalid)

	// ErrReserved reports a caller attribute passed to Put that uses a name
	// the store keeps for itself (see the package documentation), an empty
	// name, or a key attribute with a value other than the Key's. It
	// matches ErrInvalid.
	ErrReserved = errs.New("chunk: reserved attribute", errs.Invalid)

	// ErrCorrupt reports a stored payload that does not match its parent:
	// a chunk is missing for good, a length or checksum differs, or
	// compressed data does not decode. Errors wrapping it are
	// *CorruptError. It belongs to no family: the input was fine, the
	// stored data is not.
	ErrCorrupt = errs.New("chunk: corrupt payload", nil)
)

// CorruptError reports a stored payload that fails verification. It wraps
// ErrCorrupt.
type CorruptError struct {
	Key     Key
	Version string
	// Seq is the 1-based chunk that is missing or malformed, 0 when the
	// fault is in the payload as a whole (length, checksum, decoding).
	Seq    int
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Seq > 0 {
		return fmt.Sprintf("%v: key %v version %s chunk %d: %s", ErrCorrupt, e.Key, e.Version, e.Seq, e.Reason)
	}
	return fmt.Sprintf("%v: key %v version %s: %s", ErrCorrupt, e.Key, e.Version, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// invalid reports input no call could take, naming the method and the
// input: "dynashard: invalid input: chunk: Get: nil ctx".
func invalid(method, format string, args ...any) error {
	return fmt.Errorf("%w: chunk: %s: %s", ErrInvalid, method, fmt.Sprintf(format, args...))
}
