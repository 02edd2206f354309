// Package keyorder orders DynamoDB key values exactly as DynamoDB does.
//
// DynamoDB sorts the items of one partition by sort key: strings by their
// UTF-8 bytes, numbers by exact decimal value, binary values by unsigned
// bytes. Go's string comparison already is UTF-8 byte order, but numbers
// arrive as decimal strings of up to 38 significant digits with magnitudes
// from 1E-130 to 9.99…E+125, which neither float64 nor string order gets
// right. Compare parses them into an exact 128-bit mantissa and exponent, so
// ordering never rounds and never allocates.
package keyorder

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrUnordered is matched (errors.Is) by every error Compare and Parse
// return: a nil value, a type that cannot be a key (BOOL, L, M, sets, NULL),
// values of different key types, or a malformed or out-of-range number.
var ErrUnordered = errors.New("keyorder: values cannot be ordered")

// Limits of DynamoDB's number type.
const (
	// MaxDigits is the most significant digits a DynamoDB number holds.
	MaxDigits = 38
	// MinExp and MaxExp bound the decimal exponent e of a non-zero number
	// written as d.ddd×10^e: DynamoDB accepts 1E-130 up to 9.99…E+125.
	MinExp = -130
	MaxExp = 125
)

// Kind is the DynamoDB type of a key value: 'S', 'N' or 'B'.
type Kind byte

// Key kinds, as in DynamoDB's attribute type names.
const (
	S Kind = 'S'
	N Kind = 'N'
	B Kind = 'B'
)

// Key is a key value parsed once for many comparisons, as a merge needs.
// The zero Key is invalid. A Key holds references to the value it was
// parsed from and must not outlive changes to it. Keys are immutable and
// safe for concurrent use.
type Key struct {
	kind Kind
	// w is an order-preserving prefix, computed by Parse so that Compare
	// rarely touches the value itself: a merge parses a page while it is in
	// cache and then compares keys long after it left. For N it is the whole
	// number (see number.words); for S and B, the first 24 bytes,
	// big-endian and zero-padded.
	w [3]uint64
	// v is the value, for keys whose words tie. An interface keeps Key at
	// 48 bytes rather than 72 with a string and a slice, which matters
	// when a merge holds a page of them per shard.
	v types.AttributeValue
}

// prefixLen is how many bytes of an S or B value w holds.
const prefixLen = 24

// number is a decimal sign × 0.M × 10^exp where M is the significant digits
// left-aligned to MaxDigits, held as a 128-bit integer (10^38 < 2^127). Two
// non-zero numbers of one sign order by exp, then by M; zero has sign 0.
type number struct {
	sign   int8
	exp    int16
	hi, lo uint64
}

// words encodes n as three words whose lexicographic unsigned order is the
// numbers' order: a sign class (negative < zero < positive) and the
// exponent, then the mantissa; for negative numbers the exponent and the
// mantissa are inverted, since a larger magnitude is a smaller number.
func (n *number) words() [3]uint64 {
	// exp is within MinExp+1..MaxExp+1, so exp+1<<15 is positive and fits
	// in 16 bits.
	e := uint64(int64(n.exp) + 1<<15)
	switch {
	case n.sign > 0:
		return [3]uint64{2<<16 | e, n.hi, n.lo}
	case n.sign < 0:
		return [3]uint64{0<<16 | (^e & 0xffff), ^n.hi, ^n.lo}
	}
	return [3]uint64{1 << 16, 0, 0}
}

// Parse parses a key value (S, N or B). It returns an error matching
// ErrUnordered for anything else or for a number DynamoDB would reject.
func Parse(v types.AttributeValue) (Key, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		k := Key{kind: S, v: v}
		prefixS(v.Value, &k.w)
		return k, nil
	case *types.AttributeValueMemberB:
		return Key{kind: B, w: prefix(v.Value), v: v}, nil
	case *types.AttributeValueMemberN:
		n, err := parseNumber(v.Value)
		if err != nil {
			return Key{}, err
		}
		return Key{kind: N, w: n.words()}, nil
	case nil:
		return Key{}, fmt.Errorf("%w: nil value", ErrUnordered)
	default:
		return Key{}, fmt.Errorf("%w: %T is not a key type (S, N or B)", ErrUnordered, v)
	}
}

// ParsePrefix is Parse for a caller that needs only the key's kind and
// prefix words (see Key.Prefix), which it writes to w: it builds no Key,
// and writing in place spares the copies of a returned array, which cost
// a merge parsing every item more than the parse.
func ParsePrefix(v types.AttributeValue, w *[3]uint64) (Kind, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		prefixS(v.Value, w)
		return S, nil
	case *types.AttributeValueMemberB:
		*w = prefix(v.Value)
		return B, nil
	}
	k, err := Parse(v)
	*w = k.w
	return k.kind, err
}

// Kind reports the key's type.
func (k Key) Kind() Kind { return k.kind }

// Prefix returns the key's order-preserving prefix words. Between keys of
// one kind, unequal prefixes order as the keys do (word by word, unsigned)
// and only equal ones need Compare: a merge can keep these 24 bytes per
// item, half a Key, and walk half the memory.
func (k *Key) Prefix() [3]uint64 { return k.w }

// Compare returns -1, 0 or +1 as k sorts before, with or after o in
// DynamoDB's order. Keys of different kinds order by kind (B < N < S), which
// DynamoDB never needs because one attribute has one key type; callers that
// care check Kind first. It takes pointers because merges call it in their
// innermost loop.
func (k *Key) Compare(o *Key) int {
	if k.kind != o.kind {
		return cmpU(uint64(k.kind), uint64(o.kind))
	}
	switch {
	case k.w[0] != o.w[0]:
		return cmpU(k.w[0], o.w[0])
	case k.w[1] != o.w[1]:
		return cmpU(k.w[1], o.w[1])
	case k.w[2] != o.w[2]:
		return cmpU(k.w[2], o.w[2])
	}
	return k.compareRest(o)
}

// compareRest decides between keys of one kind with equal prefix words:
// up to the shorter value's length (or prefixLen) the values agree, so a
// value that fits in the prefix is a prefix of the other, padding aside.
func (k *Key) compareRest(o *Key) int {
	switch k.kind {
	case S:
		a, b := k.v.(*types.AttributeValueMemberS).Value, o.v.(*types.AttributeValueMemberS).Value
		if len(a) <= prefixLen || len(b) <= prefixLen {
			return cmp3(int64(len(a)), int64(len(b)))
		}
		return strings.Compare(a[prefixLen:], b[prefixLen:])
	case B:
		a, b := k.v.(*types.AttributeValueMemberB).Value, o.v.(*types.AttributeValueMemberB).Value
		if len(a) <= prefixLen || len(b) <= prefixLen {
			return cmp3(int64(len(a)), int64(len(b)))
		}
		return bytes.Compare(a[prefixLen:], b[prefixLen:])
	}
	return 0 // N: the words are the whole number
}

// prefix is the first prefixLen bytes of s as big-endian words, zero-padded.
func prefix[T string | []byte](s T) [3]uint64 {
	return [3]uint64{word(s, 0), word(s, 8), word(s, 16)}
}

// prefixS is prefix for a string, written to w: a merge parses every
// item's key, and the generic version's byte-at-a-time loads cost several
// times more.
func prefixS(s string, w *[3]uint64) {
	if len(s) >= prefixLen {
		w[0], w[1], w[2] = beS(s[0:8]), beS(s[8:16]), beS(s[16:24])
		return
	}
	var b [prefixLen]byte
	copy(b[:], s)
	w[0], w[1], w[2] = binary.BigEndian.Uint64(b[0:8]), binary.BigEndian.Uint64(b[8:16]), binary.BigEndian.Uint64(b[16:24])
}

func beS(s string) uint64 {
	_ = s[7]
	return uint64(s[7]) | uint64(s[6])<<8 | uint64(s[5])<<16 | uint64(s[4])<<24 |
		uint64(s[3])<<32 | uint64(s[2])<<40 | uint64(s[1])<<48 | uint64(s[0])<<56
}

// Compare returns -1, 0 or +1 as a sorts before, with or after b in
// DynamoDB's key order: S by UTF-8 bytes, N by exact decimal value, B by
// unsigned bytes. Both values must be of one key type; otherwise, or for a
// nil value or malformed number, it returns an error matching ErrUnordered.
func Compare(a, b types.AttributeValue) (int, error) {
	ka, err := Parse(a)
	if err != nil {
		return 0, err
	}
	kb, err := Parse(b)
	if err != nil {
		return 0, err
	}
	if ka.kind != kb.kind {
		return 0, fmt.Errorf("%w: cannot compare %c with %c", ErrUnordered, ka.kind, kb.kind)
	}
	return ka.Compare(&kb), nil
}

func cmp3(a, b int64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

func cmpU(a, b uint64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// parseNumber reads [+-]digits[.digits][(e|E)[+-]digits] exactly.
func parseNumber(s string) (number, error) {
	bad := func(why string) (number, error) {
		return number{}, fmt.Errorf("%w: number %q: %s", ErrUnordered, s, why)
	}
	i := 0
	var n number
	n.sign = 1
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		if s[i] == '-' {
			n.sign = -1
		}
		i++
	}
	var (
		sawDigit, sawDot bool
		digits           int    // significant digits taken into the mantissa, zeros included
		intDigits        int    // significant digits before the dot, pending zeros included
		leadFrac         int    // zeros after the dot before the first significant digit
		zeros            int    // zeros after the last non-zero digit, not yet taken
		acc              uint64 // digits not yet folded into (hi, lo)
		accN             int    // how many: at most 19, so acc < 10^19
	)
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			if sawDot {
				return bad("two decimal points")
			}
			sawDot = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		sawDigit = true
		if c == '0' {
			if digits+zeros == 0 {
				if sawDot {
					leadFrac++
				}
				continue
			}
			// Trailing zeros are not significant: take them only if a
			// non-zero digit follows.
			zeros++
			if !sawDot {
				intDigits++
			}
			continue
		}
		if digits+zeros >= MaxDigits {
			return bad("more than 38 significant digits")
		}
		for zeros > 0 {
			k := min(zeros, 19-accN)
			acc *= pow10[k]
			accN += k
			digits += k
			zeros -= k
			if accN == 19 {
				n.hi, n.lo = mulAdd(n.hi, n.lo, pow10[19], acc)
				acc, accN = 0, 0
			}
		}
		acc = acc*10 + uint64(c-'0')
		accN++
		digits++
		if accN == 19 {
			n.hi, n.lo = mulAdd(n.hi, n.lo, pow10[19], acc)
			acc, accN = 0, 0
		}
		if !sawDot {
			intDigits++
		}
	}
	if !sawDigit {
		return bad("no digits")
	}
	exp := 0
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return bad("unexpected character")
		}
		i++
		neg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			neg = s[i] == '-'
			i++
		}
		if i == len(s) {
			return bad("empty exponent")
		}
		for ; i < len(s); i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return bad("unexpected character in exponent")
			}
			exp = exp*10 + int(c-'0')
			if exp >= maxExpLiteral {
				return bad("exponent out of range")
			}
		}
		if neg {
			exp = -exp
		}
	}
	if digits == 0 {
		return number{}, nil // zero, whatever its sign or exponent
	}
	// Value = 0.M × 10^e where e counts the integer digits from the first
	// significant one, or the zeros after the dot before it.
	e := exp
	if intDigits > 0 {
		e += intDigits
	} else {
		e -= leadFrac
	}
	// DynamoDB's range in d.ddd×10^x form is MinExp ≤ x ≤ MaxExp, x = e-1.
	if e-1 < MinExp || e-1 > MaxExp {
		return bad("magnitude outside DynamoDB's range 1E-130 to 9.99E+125")
	}
	// Fold the rest and left-align to MaxDigits, so that M compares
	// directly: 10^38 < 2^127, and at most 19 digits go in per step.
	n.hi, n.lo = mulAdd(n.hi, n.lo, pow10[accN], acc)
	for pad := MaxDigits - digits; pad > 0; {
		k := min(pad, 19)
		n.hi, n.lo = mulAdd(n.hi, n.lo, pow10[k], 0)
		pad -= k
	}
	n.exp = int16(e)
	return n, nil
}

var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// maxExpLiteral bounds the written exponent, even of zero, so that no
// input makes the parser's arithmetic overflow.
const maxExpLiteral = 1_000_000

// mulAdd returns (hi,lo)*m + a; callers keep the result below 10^38.
func mulAdd(hi, lo, m, a uint64) (uint64, uint64) {
	h, l := bits.Mul64(lo, m)
	h += hi * m
	l, carry := bits.Add64(l, a, 0)
	return h + carry, l
}

// Word returns the 8 bytes of an S or B key from byte off on, big-endian
// and zero-padded, and 0 for an N key. For two S or B keys that share their
// first off bytes, a smaller Word means a smaller key; equal Words decide
// nothing. Compare already uses the first three Words; Word is for callers
// that know a longer prefix all their keys share (the date of a timestamp)
// and want to skip it. It reads the value, unlike Compare's cached words.
func (k *Key) Word(off int) uint64 {
	switch k.kind {
	case S:
		return word(k.v.(*types.AttributeValueMemberS).Value, off)
	case B:
		return word(k.v.(*types.AttributeValueMemberB).Value, off)
	}
	return 0
}

func word[T string | []byte](s T, off int) uint64 {
	if off >= len(s) {
		return 0
	}
	s = s[off:]
	if len(s) >= 8 {
		return uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
			uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7])
	}
	var w uint64
	for i := range 8 {
		w <<= 8
		if i < len(s) {
			w |= uint64(s[i])
		}
	}
	return w
}

// SharedPrefix returns how many leading bytes two S or B keys share, at
// most n; 0 for N keys or keys of different kinds.
func (k *Key) SharedPrefix(o *Key, n int) int {
	if k.kind != o.kind {
		return 0
	}
	switch k.kind {
	case S:
		return shared(k.v.(*types.AttributeValueMemberS).Value, o.v.(*types.AttributeValueMemberS).Value, n)
	case B:
		return shared(k.v.(*types.AttributeValueMemberB).Value, o.v.(*types.AttributeValueMemberB).Value, n)
	}
	return 0
}

func shared[T string | []byte](a, b T, n int) int {
	n = min(n, len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
