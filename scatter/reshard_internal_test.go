package scatter

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestCursorAcrossN: a cursor made by a plan over N suffixes, decoded
// before the layout check (decodeEarly) and fitted to the suffixes of the
// base's history, resumes exactly where it was when the base grew, and is
// out of range when it shrank below a position it names.
func TestCursorAcrossN(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for trial := range 200 {
		n := 1 + r.IntN(40)
		p := testPlan(t, n)
		pos := randomPositions(r, p)
		c, err := encodeCursor(p, pos, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The same read, by a Scatter whose layout has another N.
		q := testPlan(t, 1+r.IntN(40))
		res, err := decodeEarly(q, c, nil)
		if err != nil {
			t.Fatalf("trial %d: decodeEarly: %v", trial, err)
		}
		grown := n + r.IntN(40)
		if err := q.widen([]int{n, grown}); err != nil {
			t.Fatal(err)
		}
		got, err := res.fit(q)
		if err != nil {
			t.Fatalf("trial %d: fit to %d suffixes: %v", trial, grown, err)
		}
		want := pos
		want.starts = append(append([]*position(nil), pos.starts...), make([]*position, grown-n)...)
		for i := n; i < grown; i++ {
			want.starts[i] = pos.def // new shards start at the cursor's position
		}
		if render(got) != render(want) {
			t.Fatalf("trial %d: got\n%s\nwant\n%s", trial, render(got), render(want))
		}
		if n == 1 {
			continue
		}
		// Shrunk below the highest suffix the cursor names: out of range.
		high := 0
		for _, ps := range append(pos.starts, pos.def) {
			if ps != nil {
				high = max(high, ps.ord+1)
			}
		}
		if high < 2 {
			continue
		}
		res, _ = decodeEarly(testPlan(t, n), c, nil)
		small := testPlan(t, n)
		if err := small.widen([]int{high - 1}); err != nil {
			t.Fatal(err)
		}
		var ce *CursorError
		if _, err := res.fit(small); !errors.As(err, &ce) || ce.Reason != CursorOutOfRange {
			t.Fatalf("trial %d: fit to %d suffixes, position in %d: %v, want CursorOutOfRange", trial, high-1, high, err)
		}
	}
}
