package scatter

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/keyorder"
)

// TestPrefixes: a page's sort keys become prefix words of one kind; a page
// mixing kinds, or an item without the attribute, is an error naming it.
func TestPrefixes(t *testing.T) {
	item := func(v types.AttributeValue) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"sk": v}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

	words, kind, err := prefixes(nil, []map[string]types.AttributeValue{item(s("a")), item(s("b"))}, nil, "sk")
	if err != nil || kind != keyorder.S || len(words) != 2 || words[0][0] >= words[1][0] {
		t.Fatalf("prefixes of a, b: %v %c %v", words, kind, err)
	}
	for _, tc := range []struct {
		name  string
		items []map[string]types.AttributeValue
		want  string
	}{
		{"mixed kinds", []map[string]types.AttributeValue{item(s("a")), item(n("1"))}, `sort key "sk" is N in one item and S in another`},
		{"no attribute", []map[string]types.AttributeValue{item(s("a")), {"other": s("x")}}, `no sort key attribute "sk"`},
		{"not a key type", []map[string]types.AttributeValue{item(&types.AttributeValueMemberBOOL{Value: true})}, `sort key "sk"`},
	} {
		_, _, err := prefixes(nil, tc.items, nil, "sk")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
		if tc.name == "not a key type" && !errors.Is(err, keyorder.ErrUnordered) {
			t.Errorf("%s: %v does not match keyorder.ErrUnordered", tc.name, err)
		}
	}
}
