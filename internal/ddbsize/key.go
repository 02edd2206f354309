package ddbsize

import (
	"fmt"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CheckKeyValue checks v as the value of key attribute name: it must be S, N
// or B; S and B must be non-empty and at most MaxPartitionKeyBytes
// (MaxSortKeyBytes when isSortKey) long; N must be a valid number. The error
// is an *AttributeError wrapping ErrInvalidKey (ErrInvalidNumber for a bad
// number, which DynamoDB rejects the same way).
func CheckKeyValue(name string, v types.AttributeValue, isSortKey bool) error {
	limit, kind := MaxPartitionKeyBytes, "partition"
	if isSortKey {
		limit, kind = MaxSortKeyBytes, "sort"
	}
	var n int
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		if !utf8.ValidString(v.Value) {
			return keyError(name, "S value is not valid UTF-8")
		}
		n = len(v.Value)
	case *types.AttributeValueMemberB:
		n = len(v.Value)
	case *types.AttributeValueMemberN:
		if _, err := scanNumber(v.Value); err != nil {
			return &AttributeError{Path: name, Err: err}
		}
		return nil
	case nil:
		return keyError(name, "missing")
	default:
		return keyError(name, fmt.Sprintf("type %s, want S, N or B", typeName(v)))
	}
	if n == 0 {
		return keyError(name, "empty "+kind+" key value")
	}
	if n > limit {
		return keyError(name, fmt.Sprintf("%s key value is %d bytes, limit %d", kind, n, limit))
	}
	return nil
}

func keyError(name, why string) error {
	return &AttributeError{Path: name, Err: fmt.Errorf("%w: %s", ErrInvalidKey, why)}
}

// typeName is the DynamoDB type tag of v, for messages.
func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberM:
		return "M"
	default:
		return fmt.Sprintf("%T", v)
	}
}
