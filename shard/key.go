package shard

import (
	"fmt"
	"iter"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dynashard/dynashard/internal/errs"
)

// MaxKeyBytes is DynamoDB's limit on a partition-key value: 2,048 bytes of
// UTF-8, measured on the physical key, after the suffix is appended. A
// checked layout (not Unchecked) also writes each base's layout record at
// partition key base + "#dynashard", so its bases are at most 2,038 bytes.
// A longer one is a *KeyError matching [ErrKeyTooLong].
const MaxKeyBytes = 2048

// DefaultSep is the separator between base and suffix used by [Key], [Parse]
// and [Keys] and by the zero [Codec]: "2014-07-09.7", as in the guide.
const DefaultSep = "."

// KeyError describes a physical key (or base) that cannot be used. It
// matches [ErrInvalidKey] and [ErrInvalid], and [ErrKeyTooLong] when that
// is the reason.
type KeyError struct {
	Key    string // the offending key or base, as given
	Reason string // what is wrong with it, e.g. "non-canonical suffix"
}

// Reasons a KeyError can carry. Unexported: callers branch on ErrInvalidKey and
// ErrKeyTooLong; tests in this package compare these.
const (
	reasonEmptyBase    = "empty base"
	reasonNoSep        = "missing separator"
	reasonEmptySuffix  = "empty suffix"
	reasonNotDigits    = "suffix is not decimal digits"
	reasonNonCanonical = "non-canonical suffix (leading zero)"
	reasonZero         = "suffix < 1"
	reasonTooBig       = "suffix > MaxN"
	reasonTooLong      = "longer than 2048 bytes"
	reasonUTF8         = "invalid UTF-8"
	reasonBadSep       = "separator is empty, contains a digit or is invalid UTF-8"
	reasonNoRecord     = `longer than 2038 bytes, too long for a checked layout: its layout record's partition key, base + "#dynashard", would exceed 2048 bytes`
)

func (e *KeyError) Error() string {
	return fmt.Sprintf("shard: invalid key %q: %s", clip(e.Key), e.Reason)
}

// clip shortens s for an error message: a 100 KB key in a log line helps
// nobody; its length does. It keeps the first 64 bytes (cut back to a
// rune boundary), then "…" and the full length in bytes.
func clip(s string) string { return clipTo(s, 64) }

// clipTo is clip with a bound of show bytes.
func clipTo(s string, show int) string { return errs.Clip(s, show) }

// Is makes a KeyError match ErrInvalidKey, and ErrKeyTooLong when too long
// (a physical key over MaxKeyBytes, or a base of a checked layout whose
// record key would be).
func (e *KeyError) Is(target error) bool {
	return target == ErrKeyTooLong && (e.Reason == reasonTooLong || e.Reason == reasonNoRecord)
}

// Unwrap returns ErrInvalidKey, which matches ErrInvalid.
func (e *KeyError) Unwrap() error { return ErrInvalidKey }

// Codec formats and parses physical keys base<Sep>suffix. The zero value uses
// [DefaultSep] ("."). Sep must be non-empty valid UTF-8 without ASCII digits
// (a digit would make the suffix boundary ambiguous); Parse and Check report
// an invalid Sep as an error and Key formats with it regardless. A Codec is
// a value: safe for concurrent use.
type Codec struct {
	// Sep separates base from suffix. Empty means DefaultSep.
	Sep string
}

func (c Codec) sep() string {
	if c.Sep == "" {
		return DefaultSep
	}
	return c.Sep
}

func (c Codec) checkSep() error {
	sep := c.sep()
	if !utf8.ValidString(sep) || strings.ContainsAny(sep, "0123456789") {
		return &KeyError{Key: sep, Reason: reasonBadSep}
	}
	return nil
}

// Key returns the physical key base<Sep>suffix. It does no validation; use
// [Codec.Check] (or Parse) to check the result against DynamoDB's limits.
func (c Codec) Key(base string, suffix int) string {
	return base + c.sep() + strconv.Itoa(suffix)
}

// Check reports whether Key(base, suffix) would be a valid physical key: a
// non-empty valid-UTF-8 base, suffix in 1..MaxN, and at most MaxKeyBytes in
// total. It does not allocate the key. The error is a *KeyError naming base.
func (c Codec) Check(base string, suffix int) error {
	if err := c.checkSep(); err != nil {
		return err
	}
	switch {
	case base == "":
		return &KeyError{Key: base, Reason: reasonEmptyBase}
	case suffix < 1:
		return &KeyError{Key: c.Key(base, suffix), Reason: reasonZero}
	case suffix > MaxN:
		return &KeyError{Key: c.Key(base, suffix), Reason: reasonTooBig}
	case len(base)+len(c.sep())+digits(suffix) > MaxKeyBytes:
		return &KeyError{Key: c.Key(base, suffix), Reason: reasonTooLong}
	case !utf8.ValidString(base):
		return &KeyError{Key: base, Reason: reasonUTF8}
	}
	return nil
}

func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// Parse splits a physical key into base and suffix at the last Sep, so the
// base may itself contain Sep ("a.b.7" → "a.b", 7). It accepts exactly the
// keys Key produces for a valid base and suffix 1..MaxN: the suffix must be
// canonical decimal ("7", not "07", "+7" or "-3"), the base non-empty, the
// whole key valid UTF-8 and at most MaxKeyBytes long. Every failure is a
// *KeyError matching ErrInvalidKey.
func (c Codec) Parse(key string) (base string, suffix int, err error) {
	if err := c.checkSep(); err != nil {
		return "", 0, err
	}
	if len(key) > MaxKeyBytes {
		return "", 0, &KeyError{Key: key, Reason: reasonTooLong}
	}
	if !utf8.ValidString(key) {
		return "", 0, &KeyError{Key: key, Reason: reasonUTF8}
	}
	sep := c.sep()
	i := strings.LastIndex(key, sep)
	if i < 0 {
		return "", 0, &KeyError{Key: key, Reason: reasonNoSep}
	}
	base, s := key[:i], key[i+len(sep):]
	switch {
	case base == "":
		return "", 0, &KeyError{Key: key, Reason: reasonEmptyBase}
	case s == "":
		return "", 0, &KeyError{Key: key, Reason: reasonEmptySuffix}
	}
	for j := 0; j < len(s); j++ {
		if s[j] < '0' || s[j] > '9' {
			return "", 0, &KeyError{Key: key, Reason: reasonNotDigits}
		}
	}
	switch {
	case s[0] == '0' && len(s) == 1:
		return "", 0, &KeyError{Key: key, Reason: reasonZero}
	case s[0] == '0':
		return "", 0, &KeyError{Key: key, Reason: reasonNonCanonical}
	case len(s) > digits(MaxN):
		return "", 0, &KeyError{Key: key, Reason: reasonTooBig}
	}
	n, _ := strconv.Atoi(s) // cannot fail: ≤ 5 digits, all checked
	if n > MaxN {
		return "", 0, &KeyError{Key: key, Reason: reasonTooBig}
	}
	return base, n, nil
}

// Keys yields the n physical keys of base in suffix order: base<Sep>1 …
// base<Sep>n. It yields nothing for n < 1 and does no validation.
func (c Codec) Keys(base string, n int) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := 1; i <= n; i++ {
			if !yield(c.Key(base, i)) {
				return
			}
		}
	}
}

// Key returns base.suffix, e.g. Key("2014-07-09", 7) == "2014-07-09.7". It
// is Codec{}.Key; see [Codec.Check] for validation.
func Key(base string, suffix int) string { return Codec{}.Key(base, suffix) }

// Parse splits base.suffix at the last "."; it is Codec{}.Parse.
func Parse(key string) (base string, suffix int, err error) { return Codec{}.Parse(key) }

// Keys yields base.1 … base.n; it is Codec{}.Keys.
func Keys(base string, n int) iter.Seq[string] { return Codec{}.Keys(base, n) }
