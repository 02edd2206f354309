package avmap

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestStoredForm: a map of AttributeValues marshals to itself and
// unmarshals to itself (the attributevalue package wraps each value in an
// M, and panics on the way back); other values go through attributevalue.
func TestStoredForm(t *testing.T) {
	m := map[string]types.AttributeValue{"a": &types.AttributeValueMemberS{Value: "x"}, "n": &types.AttributeValueMemberN{Value: "1"}}
	for _, v := range []any{m, &m} {
		got, err := Marshal(v)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("Marshal(%T) = %v, %v; want the map itself", v, got, err)
		}
	}
	var out map[string]types.AttributeValue
	if err := Unmarshal(m, &out); err != nil || !reflect.DeepEqual(out, m) {
		t.Errorf("Unmarshal into a map of AttributeValues = %v, %v; want the map itself", out, err)
	}
	out["a"] = nil
	if m["a"] == nil {
		t.Error("Unmarshal shares the caller's map")
	}
	type row struct{ A string }
	var r row
	if err := Unmarshal(m, &r); err != nil || r.A != "x" {
		t.Errorf("Unmarshal into a struct = %+v, %v", r, err)
	}
	got, err := Marshal(row{A: "y"})
	if s, _ := got["A"].(*types.AttributeValueMemberS); err != nil || s == nil || s.Value != "y" {
		t.Errorf("Marshal(struct) = %v, %v", got, err)
	}
}
