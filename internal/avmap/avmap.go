// Package avmap marshals items as the attributevalue package does, but
// takes a map[string]types.AttributeValue as the item it already is. The
// attributevalue package wraps each value of such a map in an M on
// Marshal, storing what the caller did not write, and panics on
// Unmarshal into one; a caller that keeps items in their stored form (a
// Table[map[string]types.AttributeValue]) must get them back unchanged.
package avmap

import (
	"maps"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Marshal returns v's stored form: a copy of v if it is a
// map[string]types.AttributeValue (or a pointer to one), else
// attributevalue.MarshalMapWithOptions(v, optFns...).
func Marshal(v any, optFns ...func(*attributevalue.EncoderOptions)) (map[string]types.AttributeValue, error) {
	switch m := v.(type) {
	case map[string]types.AttributeValue:
		return maps.Clone(m), nil
	case *map[string]types.AttributeValue:
		if m != nil {
			return maps.Clone(*m), nil
		}
	}
	return attributevalue.MarshalMapWithOptions(v, optFns...)
}

// Unmarshal decodes av into out: a copy of av if out is a
// *map[string]types.AttributeValue, else
// attributevalue.UnmarshalMapWithOptions(av, out, optFns...).
func Unmarshal(av map[string]types.AttributeValue, out any, optFns ...func(*attributevalue.DecoderOptions)) error {
	if m, ok := out.(*map[string]types.AttributeValue); ok && m != nil {
		*m = maps.Clone(av)
		return nil
	}
	return attributevalue.UnmarshalMapWithOptions(av, out, optFns...)
}
