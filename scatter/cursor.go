package scatter

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/keyorder"
)

// Cursor is an opaque position in a logical query's result, returned by
// Page and passed back to continue. The empty Cursor means the beginning
// when passed in and the end when returned. A cursor is plain ASCII
// (base64url), safe in URLs and JSON; it is bound to the query it came
// from and, with Options.CursorKey, signed.
//
// A cursor records, for each shard, the key of the last item returned to
// the caller (not DynamoDB's LastEvaluatedKey, which runs ahead of the
// merge) or that the shard is finished, so resuming yields exactly the rest
// of the merged sequence.
type Cursor string

// ErrBadCursor is matched (errors.Is) by every error about a cursor Page
// cannot use; the error is a *CursorError saying why. Page rejects such a
// cursor before sending any request.
var ErrBadCursor = errors.New("scatter: bad cursor")

// CursorReason says why a cursor was rejected.
type CursorReason int

// Reasons for rejecting a cursor.
const (
	// CursorMalformed: not base64url, truncated, trailing bytes, or a field
	// out of its domain.
	CursorMalformed CursorReason = iota + 1
	// CursorVersion: made by an unknown version of this package.
	CursorVersion
	// CursorSignature: unsigned where a signature is required, signed where
	// no key is configured, or the signature does not verify.
	CursorSignature
	// CursorForeign: made for another query (table, index, key attributes,
	// base, sort condition, filter, direction or shard set).
	CursorForeign
	// CursorOutOfRange: names a shard outside the queried suffixes, or a key
	// that cannot be one of the query's keys.
	CursorOutOfRange
)

func (r CursorReason) String() string {
	switch r {
	case CursorMalformed:
		return "malformed"
	case CursorVersion:
		return "unknown version"
	case CursorSignature:
		return "bad signature"
	case CursorForeign:
		return "made for another query"
	case CursorOutOfRange:
		return "out of range"
	}
	return fmt.Sprintf("CursorReason(%d)", int(r))
}

// CursorError describes a rejected cursor. It matches ErrBadCursor.
type CursorError struct {
	Reason CursorReason
	Detail string
}

func (e *CursorError) Error() string {
	if e.Detail == "" {
		return "scatter: bad cursor: " + e.Reason.String()
	}
	return "scatter: bad cursor: " + e.Reason.String() + ": " + e.Detail
}

// Is makes a CursorError match ErrBadCursor.
func (e *CursorError) Is(target error) bool { return target == ErrBadCursor }

// Cursor layout (version 1), base64url without padding:
//
//	version    byte (1)
//	flags      byte (bit 0: signed)
//	query      [16]byte fingerprint of the plan
//	count      uvarint, shards listed
//	per shard, in ascending suffix order, only shards that have moved:
//	  suffix   uvarint
//	  state    byte: 1 = after key, 2 = finished
//	  key      (state 1) per key attribute of the plan, in order:
//	           type byte 'S'|'N'|'B', length uvarint, bytes
//	mac        [32]byte HMAC-SHA256 of everything before it (if signed)
const (
	cursorVersion = 1
	flagSigned    = 1
	stateAfter    = 1
	stateDone     = 2
	macSize       = sha256.Size
	headerSize    = 2 + 16
	// maxKeyValue bounds one key value in a cursor: DynamoDB's partition key
	// limit, the larger of its two key limits.
	maxKeyValue = 2048
)

// position is one shard's place in a cursor.
type position struct {
	ord  int
	done bool
	key  []types.AttributeValue // values of plan.keyAttrs, when !done
}

func cursorErr(r CursorReason, format string, args ...any) error {
	return &CursorError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

func encodeCursor(p *plan, pos []position, key []byte) (Cursor, error) {
	b := make([]byte, 0, 64)
	flags := byte(0)
	if len(key) > 0 {
		flags |= flagSigned
	}
	b = append(b, cursorVersion, flags)
	b = append(b, p.fingerprint[:]...)
	b = binary.AppendUvarint(b, uint64(len(pos)))
	for _, ps := range pos {
		b = binary.AppendUvarint(b, uint64(p.suffixes[ps.ord]))
		if ps.done {
			b = append(b, stateDone)
			continue
		}
		b = append(b, stateAfter)
		for i, v := range ps.key {
			var raw []byte
			var t byte
			switch v := v.(type) {
			case *types.AttributeValueMemberS:
				t, raw = 'S', []byte(v.Value)
			case *types.AttributeValueMemberN:
				t, raw = 'N', []byte(v.Value)
			case *types.AttributeValueMemberB:
				t, raw = 'B', v.Value
			default:
				return "", fmt.Errorf("scatter: shard %d: key attribute %q is %T, not S, N or B",
					p.suffixes[ps.ord], p.keyAttrs[i], v)
			}
			b = append(b, t)
			b = binary.AppendUvarint(b, uint64(len(raw)))
			b = append(b, raw...)
		}
	}
	if len(key) > 0 {
		m := hmac.New(sha256.New, key)
		m.Write(b)
		b = m.Sum(b)
	}
	return Cursor(base64.RawURLEncoding.EncodeToString(b)), nil
}

// decodeCursor parses c for plan p, verifying everything it can without a
// request. Positions come back in ascending ordinal order.
func decodeCursor(p *plan, c Cursor, key []byte) ([]position, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(string(c))
	if err != nil {
		return nil, cursorErr(CursorMalformed, "not base64url: %v", err)
	}
	if len(b) < 1 {
		return nil, cursorErr(CursorMalformed, "empty")
	}
	if b[0] != cursorVersion {
		return nil, cursorErr(CursorVersion, "version %d", b[0])
	}
	if len(b) < headerSize {
		return nil, cursorErr(CursorMalformed, "truncated header (%d bytes)", len(b))
	}
	flags := b[1]
	if flags&^flagSigned != 0 {
		return nil, cursorErr(CursorMalformed, "unknown flags %#x", flags)
	}
	signed := flags&flagSigned != 0
	switch {
	case len(key) > 0 && !signed:
		return nil, cursorErr(CursorSignature, "unsigned cursor, a signed one is required")
	case len(key) == 0 && signed:
		return nil, cursorErr(CursorSignature, "signed cursor, but no CursorKey is configured")
	case signed:
		if len(b) < headerSize+macSize {
			return nil, cursorErr(CursorMalformed, "truncated signature")
		}
		body, mac := b[:len(b)-macSize], b[len(b)-macSize:]
		m := hmac.New(sha256.New, key)
		m.Write(body)
		if !hmac.Equal(mac, m.Sum(nil)) {
			return nil, cursorErr(CursorSignature, "signature does not verify")
		}
		b = body
	}
	if [16]byte(b[2:headerSize]) != p.fingerprint {
		return nil, cursorErr(CursorForeign, "")
	}
	r := reader{b: b[headerSize:]}
	n, ok := r.uvarint()
	if !ok || n > uint64(len(p.suffixes)) {
		return nil, cursorErr(CursorMalformed, "bad shard count")
	}
	pos := make([]position, 0, n)
	last := -1
	for range n {
		suffix, ok := r.uvarint()
		if !ok {
			return nil, cursorErr(CursorMalformed, "truncated shard entry")
		}
		ord, found := ordinal(p.suffixes, suffix)
		if !found {
			return nil, cursorErr(CursorOutOfRange, "suffix %d is not queried", suffix)
		}
		if ord <= last {
			return nil, cursorErr(CursorMalformed, "suffix %d out of order or repeated", suffix)
		}
		last = ord
		state, ok := r.byte()
		if !ok {
			return nil, cursorErr(CursorMalformed, "truncated shard entry")
		}
		ps := position{ord: ord}
		switch state {
		case stateDone:
			ps.done = true
		case stateAfter:
			ps.key = make([]types.AttributeValue, len(p.keyAttrs))
			for i := range p.keyAttrs {
				v, err := r.keyValue()
				if err != nil {
					return nil, err
				}
				ps.key[i] = v
			}
		default:
			return nil, cursorErr(CursorMalformed, "unknown shard state %d", state)
		}
		pos = append(pos, ps)
	}
	if len(r.b) != 0 {
		return nil, cursorErr(CursorMalformed, "%d trailing bytes", len(r.b))
	}
	return pos, nil
}

func ordinal(suffixes []int, s uint64) (int, bool) {
	lo, hi := 0, len(suffixes)
	for lo < hi {
		m := (lo + hi) / 2
		if uint64(suffixes[m]) < s {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(suffixes) && uint64(suffixes[lo]) == s
}

type reader struct{ b []byte }

func (r *reader) uvarint() (uint64, bool) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) { // one encoding per value
		return 0, false
	}
	r.b = r.b[n:]
	return v, true
}

func (r *reader) byte() (byte, bool) {
	if len(r.b) == 0 {
		return 0, false
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, true
}

func (r *reader) keyValue() (types.AttributeValue, error) {
	t, ok := r.byte()
	if !ok {
		return nil, cursorErr(CursorMalformed, "truncated key")
	}
	n, ok := r.uvarint()
	if !ok || n > uint64(len(r.b)) {
		return nil, cursorErr(CursorMalformed, "truncated key")
	}
	if n == 0 || n > maxKeyValue {
		return nil, cursorErr(CursorOutOfRange, "key value of %d bytes", n)
	}
	raw := r.b[:n]
	r.b = r.b[n:]
	var v types.AttributeValue
	switch t {
	case 'S':
		if !utf8.Valid(raw) {
			return nil, cursorErr(CursorOutOfRange, "key string is not UTF-8")
		}
		v = &types.AttributeValueMemberS{Value: string(raw)}
	case 'N':
		v = &types.AttributeValueMemberN{Value: string(raw)}
		if _, err := keyorder.Parse(v); err != nil {
			return nil, cursorErr(CursorOutOfRange, "key is not a DynamoDB number: %v", err)
		}
	case 'B':
		v = &types.AttributeValueMemberB{Value: append([]byte(nil), raw...)}
	default:
		return nil, cursorErr(CursorMalformed, "unknown key type %q", t)
	}
	return v, nil
}
