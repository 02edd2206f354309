package chunk

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is. Errors from this package wrap at
// most one of them, together with the key and whatever caused it.
var (
	// ErrNotFound: the parent item does not exist or holds no payload.
	ErrNotFound = errors.New("chunk: not found")

	// ErrConflict: a concurrent write changed the item first. From Put it
	// means this Put's version never became current and never will (its
	// chunks were removed); from a streaming read, that the version being
	// read was replaced and its chunks deleted before the read finished;
	// from Delete, that writers kept replacing the item for every attempt.
	ErrConflict = errors.New("chunk: conflicting write")

	// ErrCorrupt: the stored payload does not match its parent: a chunk is
	// missing for good, a length or checksum differs, or compressed data does
	// not decode. Errors wrapping it are *CorruptError.
	ErrCorrupt = errors.New("chunk: corrupt payload")

	// ErrTooLarge: a payload above Options.MaxSize, or a parent item whose
	// caller attributes and inline payload exceed DynamoDB's item limit.
	ErrTooLarge = errors.New("chunk: too large")

	// ErrInvalidKey: a parent key DynamoDB would reject, one too long to be
	// extended by "#<version>#<seq>" within the 2,048-byte limit of a chunk
	// key.
	ErrInvalidKey = errors.New("chunk: invalid key")

	// ErrReserved: a caller attribute passed to Put uses a name the store
	// keeps for itself (see the package documentation), or repeats a key
	// attribute with a different value.
	ErrReserved = errors.New("chunk: reserved attribute")
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
