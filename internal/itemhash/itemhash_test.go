package itemhash

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func sum(item map[string]types.AttributeValue, skip func(string) bool) [32]byte {
	h := sha256.New()
	Write(h, item, skip)
	return [32]byte(h.Sum(nil))
}

// TestCanonical: equal items hash alike whatever the order of their sets'
// members, and every difference of name, type or value shows.
func TestCanonical(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	base := func() map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"a":  s("x"),
			"ss": &types.AttributeValueMemberSS{Value: []string{"p", "q", "r"}},
			"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": n("1"), "j": &types.AttributeValueMemberBOOL{Value: true}}},
			"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{s("1"), n("1")}},
		}
	}
	want := sum(base(), nil)
	same := base()
	same["ss"] = &types.AttributeValueMemberSS{Value: []string{"r", "p", "q"}}
	if sum(same, nil) != want {
		t.Error("a set listed in another order hashes differently")
	}
	for name, change := range map[string]func(m map[string]types.AttributeValue){
		"value": func(m map[string]types.AttributeValue) { m["a"] = s("y") },
		"type":  func(m map[string]types.AttributeValue) { m["a"] = n("1") },
		"name":  func(m map[string]types.AttributeValue) { m["b"] = m["a"]; delete(m, "a") },
		"list order": func(m map[string]types.AttributeValue) {
			m["l"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1"), s("1")}}
		},
		"nested":       func(m map[string]types.AttributeValue) { m["m"].(*types.AttributeValueMemberM).Value["k"] = n("2") },
		"added":        func(m map[string]types.AttributeValue) { m["z"] = &types.AttributeValueMemberNULL{Value: true} },
		"field bounds": func(m map[string]types.AttributeValue) { m["a"] = s("x" + strings.Repeat("\x00", 1)) },
	} {
		m := base()
		change(m)
		if sum(m, nil) == want {
			t.Errorf("%s changed, hash unchanged", name)
		}
	}
	skipped := base()
	skipped["dynashard:w"] = s("token")
	if sum(skipped, func(name string) bool { return strings.HasPrefix(name, "dynashard:") }) != want {
		t.Error("a skipped attribute changed the hash")
	}
}
