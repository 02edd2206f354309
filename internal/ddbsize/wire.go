package ddbsize

import (
	"encoding/base64"
	"encoding/binary"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// WireSize returns the number of bytes item takes as a JSON object in a
// request body written by the AWS SDK for Go v2: binary as padded base64,
// strings escaped the way the SDK escapes them. It never fails; values that
// ItemSize would reject are counted as the SDK would write them (nil or
// unknown values as "null"), so WireSize is an upper bound either way.
func WireSize(item map[string]types.AttributeValue) int {
	total := 2 // {}
	for name, v := range item {
		total += jsonStringLen(name) + 1 + valueWire(v)
	}
	if len(item) > 1 {
		total += len(item) - 1 // commas
	}
	return total
}

// valueWire is the JSON length of {"T":value}.
func valueWire(v types.AttributeValue) int {
	const wrap = 5 // {"":}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return wrap + 1 + jsonStringLen(v.Value)
	case *types.AttributeValueMemberN:
		return wrap + 1 + jsonStringLen(v.Value)
	case *types.AttributeValueMemberB:
		return wrap + 1 + blobLen(v.Value)
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return wrap + 4 + 4 // BOOL true
		}
		return wrap + 4 + 5
	case *types.AttributeValueMemberNULL:
		if v.Value {
			return wrap + 4 + 4
		}
		return wrap + 4 + 5
	case *types.AttributeValueMemberSS:
		n := 2 + commas(len(v.Value))
		for _, s := range v.Value {
			n += jsonStringLen(s)
		}
		return wrap + 2 + n
	case *types.AttributeValueMemberNS:
		n := 2 + commas(len(v.Value))
		for _, s := range v.Value {
			n += jsonStringLen(s)
		}
		return wrap + 2 + n
	case *types.AttributeValueMemberBS:
		n := 2 + commas(len(v.Value))
		for _, b := range v.Value {
			n += blobLen(b)
		}
		return wrap + 2 + n
	case *types.AttributeValueMemberL:
		n := 2 + commas(len(v.Value))
		for _, e := range v.Value {
			n += valueWire(e)
		}
		return wrap + 1 + n
	case *types.AttributeValueMemberM:
		n := 2 + commas(len(v.Value))
		for name, e := range v.Value {
			n += jsonStringLen(name) + 1 + valueWire(e)
		}
		return wrap + 1 + n
	default:
		// The SDK writes nothing for these; count "null" to stay an upper
		// bound of anything a future serializer might write.
		return 4
	}
}

func commas(n int) int {
	if n > 1 {
		return n - 1
	}
	return 0
}

func blobLen(b []byte) int {
	if b == nil {
		return 4 // null
	}
	return 2 + base64.StdEncoding.EncodedLen(len(b))
}

// jsonStringLen is the length of s as a quoted JSON string escaped like the
// SDK does: \" \\ \n \r \t as two bytes, other control bytes and DEL as
// \u00XX, U+2028 and U+2029 as \u202X, each invalid UTF-8 byte as U+FFFD.
func jsonStringLen(s string) int {
	n := 2 + len(s)
	for i := 0; i < len(s); {
		// Skip eight plain ASCII bytes at a time: the common case costs no
		// more than a scan.
		for i+8 <= len(s) && plain8(binary.LittleEndian.Uint64([]byte(s[i:i+8]))) {
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			n += int(asciiExtra[c])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 2 // one byte becomes the three of U+FFFD
		case r == '\u2028' || r == '\u2029':
			n += 3 // three bytes become six
		}
		i += size
	}
	return n
}

const (
	lo8 = ^uint64(0) / 255 // 0x0101…01
	hi8 = lo8 * 0x80       // 0x8080…80
)

// plain8 reports whether none of the eight bytes of w needs escaping or is
// outside ASCII.
func plain8(w uint64) bool {
	hasZero := func(v uint64) uint64 { return (v - lo8) &^ v & hi8 }
	bad := w&hi8 | // non-ASCII
		(w-lo8*0x20)&^w&hi8 | // a byte below 0x20
		hasZero(w^(lo8*'"')) | hasZero(w^(lo8*'\\')) | hasZero(w^(lo8*0x7f))
	return bad == 0
}

// asciiExtra is how many bytes the SDK's escaping adds to each ASCII byte.
var asciiExtra = func() (t [utf8.RuneSelf]uint8) {
	for c := range t {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			t[c] = 1
		case c < 0x20 || c == 0x7f:
			t[c] = 5
		}
	}
	return t
}()
