package batch

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
)

// fingerprint is a canonical encoding of a table and some attributes: two
// writes or keys collide exactly when DynamoDB would see the same item
// (numbers compare by value, sets and maps ignore order). It matches the
// entries of UnprocessedItems/UnprocessedKeys back to requests and finds
// duplicates.
func fingerprint(table string, m map[string]types.AttributeValue, names []string) string {
	// Most keys fit the stack buffer, which leaves the returned string as
	// the only allocation.
	var buf [128]byte
	b := appendBytes(buf[:0], table)
	if names == nil {
		names = sortedNames(m)
	}
	for _, n := range names {
		b = appendBytes(b, n)
		b = appendCanon(b, m[n])
	}
	return string(b)
}

func sortedNames(m map[string]types.AttributeValue) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func appendBytes[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendCanon(b []byte, v types.AttributeValue) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return appendBytes(append(b, 'S'), v.Value)
	case *types.AttributeValueMemberN:
		var nb [64]byte
		return appendBytes(append(b, 'N'), appendCanonNumber(nb[:0], v.Value))
	case *types.AttributeValueMemberB:
		return appendBytes(append(b, 'B'), v.Value)
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return append(b, 't')
		}
		return append(b, 'f')
	case *types.AttributeValueMemberNULL:
		return append(b, '0')
	case *types.AttributeValueMemberSS:
		return appendSet(append(b, 's'), slices.Clone(v.Value))
	case *types.AttributeValueMemberNS:
		ns := make([]string, len(v.Value))
		for i, n := range v.Value {
			ns[i] = canonNumber(n)
		}
		return appendSet(append(b, 'n'), ns)
	case *types.AttributeValueMemberBS:
		bs := make([]string, len(v.Value))
		for i, x := range v.Value {
			bs[i] = string(x)
		}
		return appendSet(append(b, 'b'), bs)
	case *types.AttributeValueMemberL:
		b = binary.AppendUvarint(append(b, 'L'), uint64(len(v.Value)))
		for _, e := range v.Value {
			b = appendCanon(b, e)
		}
		return b
	case *types.AttributeValueMemberM:
		b = binary.AppendUvarint(append(b, 'M'), uint64(len(v.Value)))
		for _, n := range sortedNames(v.Value) {
			b = appendBytes(b, n)
			b = appendCanon(b, v.Value[n])
		}
		return b
	default:
		// Validation refuses these before a fingerprint matters.
		return append(b, '?')
	}
}

func appendSet(b []byte, elems []string) []byte {
	slices.Sort(elems)
	b = binary.AppendUvarint(b, uint64(len(elems)))
	for _, e := range elems {
		b = appendBytes(b, e)
	}
	return b
}

func canonNumber(s string) string {
	var nb [64]byte
	return string(appendCanonNumber(nb[:0], s))
}

// appendCanonNumber appends what canonNumber returns, without the
// intermediate string, since every numeric key attribute of every write
// goes through it.
func appendCanonNumber(b []byte, s string) []byte {
	n, err := ddbsize.ParseNumber(s)
	if err != nil {
		return append(append(b, '?'), s...)
	}
	if n.Digits == "" {
		return append(b, '0')
	}
	if n.Neg {
		b = append(b, '-')
	}
	b = append(b, n.Digits[0])
	if len(n.Digits) > 1 {
		b = append(append(b, '.'), n.Digits[1:]...)
	}
	b = append(b, 'E')
	if n.Exp >= 0 {
		b = append(b, '+')
	}
	return strconv.AppendInt(b, int64(n.Exp), 10)
}

// describeKey renders the key attributes of m for error messages, short
// enough to read: "pk=S:\"user#1\" sk=N:7".
func describeKey(m map[string]types.AttributeValue, names []string) string {
	if names == nil {
		names = sortedNames(m)
	}
	var sb strings.Builder
	for i, n := range names {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(n)
		sb.WriteByte('=')
		switch v := m[n].(type) {
		case *types.AttributeValueMemberS:
			fmt.Fprintf(&sb, "S:%q", clip(v.Value))
		case *types.AttributeValueMemberN:
			fmt.Fprintf(&sb, "N:%s", clip(v.Value))
		case *types.AttributeValueMemberB:
			fmt.Fprintf(&sb, "B:%x", clip(string(v.Value)))
		case nil:
			sb.WriteString("<missing>")
		default:
			fmt.Fprintf(&sb, "%T", v)
		}
	}
	return sb.String()
}

func clip(s string) string {
	const max = 48
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
