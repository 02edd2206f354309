package faultproxy

import (
	"strings"
	"testing"
)

func TestKeyCondition(t *testing.T) {
	names := map[string]string{"#p": "pk", "#and": "pk", "#s": "sk"}
	for _, tc := range []struct {
		expr   string
		want   string
		wantOK bool
	}{
		{"pk = :v", ":v", true},
		{":v = pk", ":v", true},
		{"#p = :v", ":v", true},
		{"#p=:v AND #s > :s", ":v", true},
		{"#s BETWEEN :a AND :b AND pk = :v", ":v", true},
		{"(pk = :v) AND (begins_with(sk, :s))", ":v", true},
		{"((#p = :v)and(sk<=:s))", ":v", true},
		{"#and = :v", ":v", true},
		{"sk = :s", "", false},
		{"pk <= :v", "", false},
		{"pk = pk", "", false},
		{"", "", false},
		{"pk = :v = :w", "", false},
	} {
		got, ok := keyCondition(tc.expr, names, "pk")
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("keyCondition(%q): got %q, %v, want %q, %v", tc.expr, got, ok, tc.want, tc.wantOK)
		}
	}
}

func FuzzKeyCondition(f *testing.F) {
	for _, s := range []string{"pk = :v", "#p = :v AND sk BETWEEN :a AND :b", "((#p=:v))", "<>=,(", "AND AND", ":x = #p and begins_with(#s, :y)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		ph, ok := keyCondition(expr, map[string]string{"#p": "pk"}, "pk")
		if ok && (!strings.HasPrefix(ph, ":") || !strings.Contains(expr, ph)) {
			t.Errorf("keyCondition(%q) = %q: want a placeholder from the expression", expr, ph)
		}
		var noSpace []byte
		for i := 0; i < len(expr); i++ {
			if strings.IndexByte(exprSpace, expr[i]) < 0 {
				noSpace = append(noSpace, expr[i])
			}
		}
		if strings.Join(lexExpr(expr), "") != string(noSpace) {
			t.Errorf("lexExpr(%q) = %q: lost or added characters", expr, lexExpr(expr))
		}
	})
}

func FuzzDecodeItem(f *testing.F) {
	for _, s := range []string{
		`{"a":{"S":"x"},"b":{"N":"1"},"c":{"B":"AAE="},"d":{"BOOL":true},"e":{"NULL":true}}`,
		`{"m":{"M":{"x":{"L":[{"SS":["a"]},{"NS":["1"]},{"BS":["AA=="]}]}}}}`,
		`{"a":{"S":"x","N":"1"}}`, `{"a":{"Q":1}}`, `[]`, `{"a":{"L":[{}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		item, err := decodeItem(b)
		if err == nil {
			_ = itemSize(item) // must not panic
		}
	})
}
