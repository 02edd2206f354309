// Package errs holds the error values every public package of dynashard
// shares, so that errors.Is(err, chunk.ErrNotFound) and errors.Is(err,
// shard.ErrNotFound) are the same test, as os.ErrNotExist is
// fs.ErrNotExist. Each public package re-exports them under its own name.
package errs

//lint:file-ignore ST1012 Invalid, NotFound and Conflict are family roots, not sentinels: every public package re-exports them as ErrInvalid, ErrNotFound and ErrConflict.

import (
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"
)

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

	// InvalidStrategy is shard.ErrInvalidStrategy, here so that the skew
	// analysis (internal/skew) reports the same error without importing
	// shard.
	InvalidStrategy = New("shard: invalid strategy", Invalid)

	// InvalidKey, KeyTooLong, LayoutMismatch and MalformedRecord are
	// shard's sentinels of the same names, here so that a base's layout
	// record (internal/record), read by scatter as by shard, fails with
	// them without importing shard.
	InvalidKey      = New("shard: invalid key", Invalid)
	KeyTooLong      = New("shard: key too long", Invalid)
	LayoutMismatch  = New("shard: layout mismatch", nil)
	MalformedRecord = New("shard: malformed layout record", nil)
)

// Kind is a package's own sentinel that also matches a family root, so
// that errors.Is(err, shard.ErrInvalidItem) and errors.Is(err,
// shard.ErrInvalid) both hold for one error.
type Kind struct {
	msg    string
	family error
}

// New returns a sentinel with message msg in family (Invalid, NotFound or
// Conflict).
func New(msg string, family error) error { return &Kind{msg: msg, family: family} }

func (k *Kind) Error() string { return k.msg }
func (k *Kind) Unwrap() error { return k.family }

// IsNil reports whether v is nil or an interface holding a nil pointer,
// map, slice, func or channel: a client passed as (*dynamodb.Client)(nil)
// would otherwise fail only inside a request, in a goroutine of ours.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// Clip shortens s for an error message: a 100 KB key in a log line helps
// nobody; its length does. It keeps the first show bytes (cut back to a
// rune boundary), then "…" and the full length in bytes.
func Clip(s string, show int) string {
	if len(s) <= show {
		return s
	}
	cut := show
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}
