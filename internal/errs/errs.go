// Package errs holds the error values every public package of dynashard
// shares, so that errors.Is(err, chunk.ErrNotFound) and errors.Is(err,
// shard.ErrNotFound) are the same test, as os.ErrNotExist is
// fs.ErrNotExist. Each public package re-exports them under its own name.
package errs

import "errors"

var (
	// Invalid is matched by every error about input rejected before any
	// request: a nil client or context, a bad table description, an item
	// or key DynamoDB would refuse, a bad cursor.
	Invalid = errors.New("dynashard: invalid input")
	// NotFound reports that no item has the key asked for.
	NotFound = errors.New("dynashard: not found")
	// Conflict reports a conditional write that lost: the item changed
	// since it was read, or exists when it must not.
	Conflict = errors.New("dynashard: conflict")
)
