package scatter

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/shard"
)

// Cursor is an opaque position in a logical query's result, returned by
// Page and passed back to continue. The empty Cursor means the beginning
// when passed in and the end when returned. A cursor is plain ASCII
// (base64url), safe in URLs and JSON; it is bound to the read it came
// from (layout without its N, base, condition, filter, direction, and
// the suffix set if Options.Suffixes names one) and, with
// Options.CursorKey, signed.
//
// A cursor records the position of the last item returned, in the merged
// order (its suffix and key), and every shard resumes from there: the next
// Page behaves as one Query over the merged key resumed after that item,
// also when items were written or deleted in between (see the package
// doc). A shard that stands elsewhere, one read past items its filter
// removed or one that failed under Options.Partial, has its own position
// in the cursor. A cursor records neither N nor the set of shards (unless
// Options.Suffixes names a subset): each Page reads every suffix of the
// base's shard-count history as it stands then, so a cursor made before a
// shard.Table.Reshard resumes exactly after it, the new shards being read
// from the recorded position on. Only a Rebalance that shrinks a base
// retires suffixes; a cursor positioned in one of them is then rejected
// (CursorOutOfRange) after the layout check. An ordered cursor also names
// the item it stopped at, so that if a shard.Table.Rebalance moves that
// item to a shard the merge reads after it, the next Page does not return
// it again: by its sort key under a calculated strategy, in a base known
// to follow package shard's protocol, else by its sort key and an 8-byte
// digest of its attributes but the partition key (see "Cursors" in the
// package doc).
type Cursor string

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
	// CursorForeign: made for another read (table, index, key attributes,
	// strategy kind, separator, base, sort condition, filter, direction
	// or a suffix set named by Options.Suffixes). N is not part of it.
	CursorForeign
	// CursorOutOfRange: names a shard outside the suffixes read, or a key
	// that cannot be one of the read's keys: a sort key of another type
	// than the layout's SortKeyType, values of one attribute of different
	// types, longer than DynamoDB allows, or outside the KeyCondition.
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

// CursorError describes a rejected cursor. It matches ErrInvalidCursor
// and ErrInvalid.
type CursorError struct {
	Reason CursorReason
	Detail string
}

func (e *CursorError) Error() string {
	if e.Detail == "" {
		return "scatter: invalid cursor: " + e.Reason.String()
	}
	return "scatter: invalid cursor: " + e.Reason.String() + ": " + e.Detail
}

// Unwrap returns ErrInvalidCursor, which matches ErrInvalid.
func (e *CursorError) Unwrap() error { return ErrInvalidCursor }

// Cursor layout (version 2), base64url without padding:
//
//	version    byte (2)
//	flags      byte (bit 0: signed; bit 1: digest follows; bit 2: the
//	           sort key names the item at the default position)
//	query      [16]byte fingerprint of the plan
//	digest     [8]byte, if flagged: of the item at the default position
//	default    position: where every shard resumes unless listed below
//	count      uvarint, shards listed
//	per shard, in ascending suffix order, only shards whose place differs:
//	  suffix   uvarint
//	  place    position
//	mac        [32]byte HMAC-SHA256 of everything before it (if signed)
//
// A position is the suffix of the shard its item is in (uvarint; 0 means
// the beginning, and nothing follows) and, per key attribute of the plan,
// in order: type byte 'S'|'N'|'B', length uvarint, bytes.
const (
	cursorVersion = 2
	flagSigned    = 1
	flagDigest    = 2
	flagKey       = 4
	macSize       = sha256.Size
	headerSize    = 2 + 16
	// maxKeyValue bounds one key value in a cursor: DynamoDB's partition key
	// limit, the larger of its two key limits.
	maxKeyValue = 2048
)

// resume is where a Page resumes: the default position most shards share
// and each shard's own (nil: the beginning).
type resume struct {
	def    *position
	starts []*position // by ordinal; nil slice: every shard at def
	// digest is itemDigest of the item at def, if known, and byKey says
	// that def's sort key alone names it: the item met in a shard read
	// inclusively of def's key, where a Rebalance may have moved it, is
	// that item, not another with the same key (see run.resumedItem).
	digest    uint64
	hasDigest bool
	byKey     bool
}

func cursorErr(r CursorReason, format string, args ...any) error {
	return &CursorError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

func encodeCursor(p *plan, res resume, key []byte) (Cursor, error) {
	b := make([]byte, 0, 64)
	flags := byte(0)
	if len(key) > 0 {
		flags |= flagSigned
	}
	if res.hasDigest {
		flags |= flagDigest
	}
	if res.byKey {
		flags |= flagKey
	}
	b = append(b, cursorVersion, flags)
	b = append(b, p.fingerprint[:]...)
	if res.hasDigest {
		b = binary.BigEndian.AppendUint64(b, res.digest)
	}
	b, err := appendPosition(b, p, res.def)
	if err != nil {
		return "", err
	}
	var listed []int
	for ord, pos := range res.starts {
		if !samePosition(pos, res.def) {
			listed = append(listed, ord)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(listed)))
	for _, ord := range listed {
		b = binary.AppendUvarint(b, uint64(p.suffixes[ord]))
		if b, err = appendPosition(b, p, res.starts[ord]); err != nil {
			return "", err
		}
	}
	if len(key) > 0 {
		m := hmac.New(sha256.New, key)
		m.Write(b)
		b = m.Sum(b)
	}
	return Cursor(base64.RawURLEncoding.EncodeToString(b)), nil
}

func appendPosition(b []byte, p *plan, pos *position) ([]byte, error) {
	if pos == nil {
		return append(b, 0), nil
	}
	b = binary.AppendUvarint(b, uint64(p.suffixes[pos.ord]))
	for i, v := range pos.key {
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
			return nil, fmt.Errorf("scatter: shard %d: key attribute %q is %T, not S, N or B",
				p.suffixes[pos.ord], p.keyAttrs[i], v)
		}
		b = append(b, t)
		b = binary.AppendUvarint(b, uint64(len(raw)))
		b = append(b, raw...)
	}
	return b, nil
}

// decodeCursor parses c for plan p and verifies everything it can without
// a request: structure, signature, binding, and that every position is one
// DynamoDB accepts for this query.
func decodeCursor(p *plan, c Cursor, key []byte) (resume, error) {
	b, flags, err := cursorBody(p, c, key)
	if err != nil {
		return resume{}, err
	}
	res := resume{byKey: flags&flagKey != 0}
	if flags&flagDigest != 0 {
		if len(b) < 8 {
			return resume{}, cursorErr(CursorMalformed, "truncated digest")
		}
		res.digest, res.hasDigest, b = binary.BigEndian.Uint64(b), true, b[8:]
	}
	r := reader{b: b}
	if res.def, err = r.position(p); err != nil {
		return resume{}, err
	}
	n, ok := r.uvarint()
	if !ok || n > uint64(p.suffixCount()) {
		return resume{}, cursorErr(CursorMalformed, "bad shard count")
	}
	// Listed shards, in ascending order; the others stand at def. Before
	// the layout check (decodeEarly) the suffixes are not known: starts
	// then reaches only as far as the last listed shard, and fit extends it.
	type listed struct {
		ord int
		pos *position
	}
	var ls []listed
	last := -1
	for range n {
		ord, pos, err := r.override(p, res.def, last)
		if err != nil {
			return resume{}, err
		}
		ls, last = append(ls, listed{ord, pos}), ord
	}
	size := len(p.suffixes)
	if p.anySuffix {
		size = last + 1
	}
	res.starts = make([]*position, size)
	for i := range res.starts {
		res.starts[i] = res.def
	}
	for _, l := range ls {
		res.starts[l.ord] = l.pos
	}
	if len(r.b) != 0 {
		return resume{}, cursorErr(CursorMalformed, "%d trailing bytes", len(r.b))
	}
	return res, p.checkPositions(res)
}

// cursorBody decodes c and checks its version, signature and binding,
// returning what follows the header, and the flags.
func cursorBody(p *plan, c Cursor, key []byte) ([]byte, byte, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(string(c))
	if err != nil {
		return nil, 0, cursorErr(CursorMalformed, "not base64url: %v", err)
	}
	if len(b) < 1 {
		return nil, 0, cursorErr(CursorMalformed, "empty")
	}
	if b[0] != cursorVersion {
		return nil, 0, cursorErr(CursorVersion, "version %d", b[0])
	}
	if len(b) < headerSize {
		return nil, 0, cursorErr(CursorMalformed, "truncated header (%d bytes)", len(b))
	}
	flags := b[1]
	if flags&^(flagSigned|flagDigest|flagKey) != 0 {
		return nil, 0, cursorErr(CursorMalformed, "unknown flags %#x", flags)
	}
	if b, err = verify(b, flags&flagSigned != 0, key); err != nil {
		return nil, 0, err
	}
	if [16]byte(b[2:headerSize]) != p.fingerprint {
		return nil, 0, cursorErr(CursorForeign, "")
	}
	return b[headerSize:], flags, nil
}

// verify checks b's signature against key and returns b without it.
func verify(b []byte, signed bool, key []byte) ([]byte, error) {
	switch {
	case len(key) > 0 && !signed:
		return nil, cursorErr(CursorSignature, "unsigned cursor, a signed one is required")
	case len(key) == 0 && signed:
		return nil, cursorErr(CursorSignature, "signed cursor, but no CursorKey is configured")
	case !signed:
		return b, nil
	case len(b) < headerSize+macSize:
		return nil, cursorErr(CursorMalformed, "truncated signature")
	}
	body, mac := b[:len(b)-macSize], b[len(b)-macSize:]
	m := hmac.New(sha256.New, key)
	m.Write(body)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return nil, cursorErr(CursorSignature, "signature does not verify")
	}
	return body, nil
}

// override reads one listed shard's ordinal and position; last is the
// ordinal listed before it.
func (r *reader) override(p *plan, def *position, last int) (int, *position, error) {
	suffix, ok := r.uvarint()
	if !ok {
		return 0, nil, cursorErr(CursorMalformed, "truncated shard entry")
	}
	ord, found := p.ordinal(suffix)
	if !found {
		return 0, nil, cursorErr(CursorOutOfRange, "suffix %d is not queried", suffix)
	}
	if ord <= last {
		return 0, nil, cursorErr(CursorMalformed, "suffix %d out of order or repeated", suffix)
	}
	pos, err := r.position(p)
	if err != nil {
		return 0, nil, err
	}
	if samePosition(pos, def) {
		return 0, nil, cursorErr(CursorMalformed, "suffix %d listed at the default position", suffix)
	}
	return ord, pos, nil
}

func (r *reader) position(p *plan) (*position, error) {
	suffix, ok := r.uvarint()
	if !ok {
		return nil, cursorErr(CursorMalformed, "truncated position")
	}
	if suffix == 0 {
		return nil, nil
	}
	ord, found := p.ordinal(suffix)
	if !found {
		return nil, cursorErr(CursorOutOfRange, "position in suffix %d, which is not queried", suffix)
	}
	pos := &position{ord: ord, key: make([]types.AttributeValue, len(p.keyAttrs))}
	for i := range p.keyAttrs {
		v, err := r.keyValue()
		if err != nil {
			return nil, err
		}
		pos.key[i] = v
	}
	if err := p.parseSortKey(pos); err != nil {
		return nil, cursorErr(CursorOutOfRange, "%v", err)
	}
	return pos, nil
}

// checkPositions verifies that each position is a key DynamoDB accepts
// for the read, so that a forged unsigned cursor fails here rather than
// at DynamoDB: the sort key of the layout's SortKeyType, every attribute
// of one type across the cursor (an index layout's table key has no
// declared type), each value within DynamoDB's length limits, and the
// sort key inside the KeyCondition's range.
func (p *plan) checkPositions(res resume) error {
	kinds := slices.Clone(p.keyKinds)
	for _, pos := range append([]*position{res.def}, res.starts...) {
		if pos == nil {
			continue
		}
		for i, v := range pos.key {
			kind, n := valueKind(v)
			switch {
			case n > p.keyMax[i]:
				return cursorErr(CursorOutOfRange, "key %q of %d bytes, DynamoDB's limit is %d", p.keyAttrs[i], n, p.keyMax[i])
			case kinds[i] != 0 && kind != kinds[i]:
				return cursorErr(CursorOutOfRange, "key %q is %c, want %c", p.keyAttrs[i], kind, kinds[i])
			}
			kinds[i] = kind
		}
		if p.skIndex >= 0 && !p.cond.rng.contains(&pos.sk) {
			return cursorErr(CursorOutOfRange, "sort key %q outside the KeyCondition", p.skAttr)
		}
	}
	return nil
}

// valueKind returns a key value's type and its length in bytes.
func valueKind(v types.AttributeValue) (keyorder.Kind, int) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return keyorder.S, len(v.Value)
	case *types.AttributeValueMemberN:
		return keyorder.N, len(v.Value)
	case *types.AttributeValueMemberB:
		return keyorder.B, len(v.Value)
	}
	return 0, 0
}

// ordinal returns the ordinal of suffix s among the plan's suffixes; for
// a plan decoding before the layout check (anySuffix), s - 1 for any s in
// 1..shard.MaxN.
func (p *plan) ordinal(s uint64) (int, bool) {
	if p.anySuffix {
		return int(s) - 1, s >= 1 && s <= shard.MaxN
	}
	return ordinal(p.suffixes, s)
}

// suffixCount is the number of suffixes the plan may read.
func (p *plan) suffixCount() int {
	if p.anySuffix {
		return shard.MaxN
	}
	return len(p.suffixes)
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
