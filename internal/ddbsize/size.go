package ddbsize

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB limits on items and keys.
const (
	// MaxItemSize is the largest item DynamoDB stores, in bytes as ItemSize
	// counts them (400 KB).
	MaxItemSize = 409600
	// MaxPartitionKeyBytes is the longest partition-key value (S in UTF-8
	// bytes, B in raw bytes).
	MaxPartitionKeyBytes = 2048
	// MaxSortKeyBytes is the longest sort-key value.
	MaxSortKeyBytes = 1024
	// MaxDepth is how many levels deep DynamoDB lets attributes nest: a
	// top-level attribute is level 1, the elements of an L or M one level
	// below it. An L or M (even an empty one) is refused at level MaxDepth,
	// where its elements would be deeper than MaxDepth.
	MaxDepth = 32
)

// Sentinel errors, matched with errors.Is. Errors returned by this package
// wrap one of them, usually inside an *AttributeError naming the attribute.
var (
	// ErrItemTooLarge reports an item over MaxItemSize.
	ErrItemTooLarge = errors.New("ddbsize: item too large")
	// ErrInvalidKey reports a key value DynamoDB would reject: missing,
	// not S, N or B, empty, or too long.
	ErrInvalidKey = errors.New("ddbsize: invalid key")
	// ErrInvalidNumber reports an N value DynamoDB would reject.
	ErrInvalidNumber = errors.New("ddbsize: invalid number")
	// ErrInvalidValue reports any other value DynamoDB would reject: a nil or
	// unknown AttributeValue, an empty or duplicated set, NULL false, text
	// that is not UTF-8, an empty attribute name, nesting beyond MaxDepth.
	ErrInvalidValue = errors.New("ddbsize: invalid value")
)

// AttributeError names the attribute an error was found in.
type AttributeError struct {
	// Path locates the value: the attribute name, then ".name" for map
	// members and "[i]" for list and set elements.
	Path string
	Err  error
}

func (e *AttributeError) Error() string {
	return fmt.Sprintf("%v (attribute %s)", e.Err, strconv.Quote(e.Path))
}

func (e *AttributeError) Unwrap() error { return e.Err }

// SizeError reports an item over the limit; it wraps ErrItemTooLarge.
type SizeError struct {
	Size, Limit int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%v: %d bytes, limit %d", ErrItemTooLarge, e.Size, e.Limit)
}

func (e *SizeError) Unwrap() error { return ErrItemTooLarge }

// ItemSize returns the size DynamoDB counts for item, in bytes. It returns an
// error (an *AttributeError wrapping ErrInvalidValue or ErrInvalidNumber)
// for any value DynamoDB would reject; it does not check the size limit
// (see CheckItem) or key rules (see CheckKeyValue).
func ItemSize(item map[string]types.AttributeValue) (int, error) {
	total := 0
	for name, v := range item {
		n, err := attrSize(name, v, 0)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// CheckItem returns ItemSize(item), with a *SizeError wrapping
// ErrItemTooLarge when it exceeds MaxItemSize.
func CheckItem(item map[string]types.AttributeValue) (int, error) {
	n, err := ItemSize(item)
	if err != nil {
		return 0, err
	}
	if n > MaxItemSize {
		return n, &SizeError{Size: n, Limit: MaxItemSize}
	}
	return n, nil
}

// attrSize is a named value's size: its name plus its value.
func attrSize(name string, v types.AttributeValue, depth int) (int, error) {
	if name == "" {
		return 0, &AttributeError{Path: name, Err: fmt.Errorf("%w: empty attribute name", ErrInvalidValue)}
	}
	if !utf8.ValidString(name) {
		return 0, &AttributeError{Path: name, Err: fmt.Errorf("%w: attribute name is not valid UTF-8", ErrInvalidValue)}
	}
	n, err := valueSize(v, depth)
	if err != nil {
		return 0, prefixPath(name, err)
	}
	return len(name) + n, nil
}

// valueSize is a value's size without a name; depth is its level minus one.
// Errors are *AttributeError
// with a Path relative to the value ("" for the value itself, ".x", "[3]").
func valueSize(v types.AttributeValue, depth int) (int, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		if !utf8.ValidString(v.Value) {
			return 0, valueError("S value is not valid UTF-8")
		}
		return len(v.Value), nil
	case *types.AttributeValueMemberN:
		sc, err := scanNumber(v.Value)
		if err != nil {
			return 0, &AttributeError{Err: err}
		}
		return sc.size(), nil
	case *types.AttributeValueMemberB:
		if v.Value == nil {
			return 0, valueError("nil B value (use an empty, non-nil slice)")
		}
		return len(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return 1, nil
	case *types.AttributeValueMemberNULL:
		if !v.Value {
			return 0, valueError("NULL must be true")
		}
		return 1, nil
	case *types.AttributeValueMemberSS:
		return stringSetSize(v.Value)
	case *types.AttributeValueMemberNS:
		return numberSetSize(v.Value)
	case *types.AttributeValueMemberBS:
		return binarySetSize(v.Value)
	case *types.AttributeValueMemberL:
		if depth >= MaxDepth-1 {
			return 0, valueError(fmt.Sprintf("L nested deeper than %d levels", MaxDepth))
		}
		total := 3
		for i, e := range v.Value {
			n, err := valueSize(e, depth+1)
			if err != nil {
				return 0, prefixPath("["+strconv.Itoa(i)+"]", err)
			}
			total += 1 + n
		}
		return total, nil
	case *types.AttributeValueMemberM:
		if depth >= MaxDepth-1 {
			return 0, valueError(fmt.Sprintf("M nested deeper than %d levels", MaxDepth))
		}
		total := 3
		for name, e := range v.Value {
			n, err := attrSize(name, e, depth+1)
			if err != nil {
				return 0, prefixPath(".", err)
			}
			total += 1 + n
		}
		return total, nil
	case nil:
		return 0, valueError("nil AttributeValue")
	default:
		return 0, valueError(fmt.Sprintf("unsupported AttributeValue %T", v))
	}
}

func stringSetSize(ss []string) (int, error) {
	if len(ss) == 0 {
		return 0, valueError("empty SS")
	}
	total := 0
	for i, s := range ss {
		if !utf8.ValidString(s) {
			return 0, elemError(i, "SS element is not valid UTF-8")
		}
		total += len(s)
	}
	if i, ok := firstDuplicate(len(ss), func(i int) string { return ss[i] }); ok {
		return 0, elemError(i, "duplicate SS element")
	}
	return total, nil
}

func numberSetSize(ns []string) (int, error) {
	if len(ns) == 0 {
		return 0, valueError("empty NS")
	}
	total := 0
	for i, s := range ns {
		sc, err := scanNumber(s)
		if err != nil {
			return 0, &AttributeError{Path: "[" + strconv.Itoa(i) + "]", Err: err}
		}
		total += sc.size()
	}
	if len(ns) > 1 {
		// 1 and 1.0 are the same set element to DynamoDB.
		if i, ok := firstDuplicate(len(ns), func(i int) string {
			n, _ := ParseNumber(ns[i])
			return n.String()
		}); ok {
			return 0, elemError(i, "duplicate NS element")
		}
	}
	return total, nil
}

func binarySetSize(bs [][]byte) (int, error) {
	if len(bs) == 0 {
		return 0, valueError("empty BS")
	}
	total := 0
	for i, b := range bs {
		if b == nil {
			return 0, elemError(i, "nil BS element")
		}
		total += len(b)
	}
	if len(bs) <= 8 {
		for i := 1; i < len(bs); i++ {
			for j := 0; j < i; j++ {
				if bytes.Equal(bs[i], bs[j]) {
					return 0, elemError(i, "duplicate BS element")
				}
			}
		}
	} else if i, ok := firstDuplicate(len(bs), func(i int) string { return string(bs[i]) }); ok {
		return 0, elemError(i, "duplicate BS element")
	}
	return total, nil
}

// firstDuplicate returns the index of the first element equal to an earlier
// one. Small sets are compared pairwise to avoid allocating a map.
func firstDuplicate(n int, key func(int) string) (int, bool) {
	if n < 2 {
		return 0, false
	}
	if n <= 8 {
		for i := 1; i < n; i++ {
			ki := key(i)
			for j := 0; j < i; j++ {
				if key(j) == ki {
					return i, true
				}
			}
		}
		return 0, false
	}
	seen := make(map[string]struct{}, n)
	for i := 0; i < n; i++ {
		k := key(i)
		if _, dup := seen[k]; dup {
			return i, true
		}
		seen[k] = struct{}{}
	}
	return 0, false
}

func valueError(why string) error {
	return &AttributeError{Err: fmt.Errorf("%w: %s", ErrInvalidValue, why)}
}

func elemError(i int, why string) error {
	return &AttributeError{Path: "[" + strconv.Itoa(i) + "]", Err: fmt.Errorf("%w: %s", ErrInvalidValue, why)}
}

// prefixPath prepends p to the Path of an *AttributeError. Map members pass
// "." and get their own name joined by attrSize.
func prefixPath(p string, err error) error {
	var ae *AttributeError
	if errors.As(err, &ae) {
		return &AttributeError{Path: p + ae.Path, Err: ae.Err}
	}
	return &AttributeError{Path: p, Err: err}
}
