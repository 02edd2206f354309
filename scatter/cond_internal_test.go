package scatter

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/keyorder"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// TestKeyCondition: every form DynamoDB accepts parses to the range that
// admits exactly the keys DynamoDB's condition admits, checked against a
// direct evaluation on many keys.
func TestKeyCondition(t *testing.T) {
	values := map[string]types.AttributeValue{":a": s("b"), ":b": s("d"), ":p": s("c")}
	names := map[string]string{"#k": "sk"}
	cmp := func(k, v string) int { return strings.Compare(k, v) }
	tests := []struct {
		cond  string
		admit func(k string) bool
	}{
		{"#k = :a", func(k string) bool { return k == "b" }},
		{"sk < :a", func(k string) bool { return cmp(k, "b") < 0 }},
		{"#k <= :a", func(k string) bool { return cmp(k, "b") <= 0 }},
		{"#k > :a", func(k string) bool { return cmp(k, "b") > 0 }},
		{"#k >= :a", func(k string) bool { return cmp(k, "b") >= 0 }},
		{":a < #k", func(k string) bool { return cmp(k, "b") > 0 }},
		{":a >= sk", func(k string) bool { return cmp(k, "b") <= 0 }},
		{"#k between :a and :b", func(k string) bool { return cmp(k, "b") >= 0 && cmp(k, "d") <= 0 }},
		{"((#k BETWEEN :a AND :b))", func(k string) bool { return cmp(k, "b") >= 0 && cmp(k, "d") <= 0 }},
		{"begins_with (#k, :p)", func(k string) bool { return strings.HasPrefix(k, "c") }},
	}
	keys := []string{"a", "b", "b\x00", "ba", "c", "c\U0010FFFF", "cz", "d", "d\x00", "e", strings.Repeat("c", 1024)}
	for _, tt := range tests {
		c, err := parseKeyCondition("sk", 0, Options{KeyCondition: tt.cond, Names: names, Values: values})
		if err != nil {
			t.Errorf("%q: %v", tt.cond, err)
			continue
		}
		if c.kind != keyorder.S {
			t.Errorf("%q: got kind %c, want S", tt.cond, c.kind)
		}
		for _, k := range keys {
			key, _ := keyorder.Parse(s(k))
			if got, want := c.rng.contains(&key), tt.admit(k); got != want {
				t.Errorf("%q admits %q: got %v, want %v", tt.cond, k, got, want)
			}
		}
	}
	for _, bad := range []string{"#k <> :a", "#k = #k", ":a = :b", "#k > :a AND #k < :b", "BEGINS_WITH(#k, :p)",
		"#k BETWEEN :b AND :a", "#x = :a", "#k = :missing", "#k IN (:a)", "(#k = :a", "#k = :a)", "size(#k) > :a"} {
		_, err := parseKeyCondition("sk", 0, Options{KeyCondition: bad, Names: names, Values: values})
		if !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("%q: got %v, want ErrInvalidQuery", bad, err)
		}
	}
}

// TestMaxWithPrefix: the bound that begins_with becomes is a valid key of
// 1,024 bytes at most that sorts after every key with the prefix, for
// random prefixes and keys, strings and binary.
func TestMaxWithPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	runes := []rune{0, 'a', 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF}
	for range 300 {
		var p, k strings.Builder
		for range r.IntN(4) {
			p.WriteRune(runes[r.IntN(len(runes))])
		}
		k.WriteString(p.String())
		for k.Len() < maxSortKeyBytes-4 && r.IntN(50) > 0 {
			k.WriteRune(runes[r.IntN(len(runes))])
		}
		hi := maxWithPrefix(s(p.String())).(*types.AttributeValueMemberS).Value
		if len(hi) > maxSortKeyBytes || !utf8.ValidString(hi) || !strings.HasPrefix(hi, p.String()) {
			t.Fatalf("prefix %q: bound of %d bytes, valid %v", p.String(), len(hi), utf8.ValidString(hi))
		}
		if k.String() > hi {
			t.Fatalf("prefix %q: key %q sorts after the bound", p.String(), k.String())
		}
		b := []byte(k.String())
		bhi := maxWithPrefix(&types.AttributeValueMemberB{Value: []byte(p.String())}).(*types.AttributeValueMemberB).Value
		if len(bhi) != maxSortKeyBytes || bytes.Compare(b, bhi) > 0 {
			t.Fatalf("binary prefix %x: bound of %d bytes below key", p.String(), len(bhi))
		}
	}
}
