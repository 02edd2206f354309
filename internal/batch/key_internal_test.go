package batch

import (
	"testing"

	"github.com/dynashard/dynashard/internal/ddbsize"
)

// TestCanonNumber: the fingerprint's number form is ddbsize's canonical
// string, which it builds without allocating.
func TestCanonNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "0.000", "7", "-7", "1.50", "150", "1e3", "-1.25E-7", "0.001",
		"12345678901234567890123456789012345678", "9.99E+125", "1E-130", "abc", "", "1..2"} {
		want := "?" + s
		if n, err := ddbsize.ParseNumber(s); err == nil {
			want = n.String()
		}
		if got := canonNumber(s); got != want {
			t.Errorf("canonNumber(%q): got %q, want %q", s, got, want)
		}
	}
}
