package shard

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

type kv struct {
	k string
	i int
}

func kvKey(e kv) string { return e.k }
func kvSize(kv) int     { return 10 }

func sortedInput(keys, per int) []kv {
	var in []kv
	for k := range keys {
		for i := range per {
			in = append(in, kv{fmt.Sprintf("U%d", k+1), i})
		}
	}
	return in
}

func TestInterleaveSmall(t *testing.T) {
	in := []kv{{"U1", 0}, {"U1", 1}, {"U1", 2}, {"U2", 0}, {"U2", 1}, {"U3", 0}}
	got := slices.Collect(interleave(slices.Values(in), kvKey, kvSize, 100, 1<<20, nil))
	want := []kv{{"U1", 0}, {"U2", 0}, {"U3", 0}, {"U1", 1}, {"U2", 1}, {"U1", 2}}
	if diff := gocmp.Diff(want, got, gocmp.AllowUnexported(kv{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestInterleaveProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	tests := []struct {
		name              string
		in                []kv
		maxItems, maxByte int
	}{
		{"sorted, buffer 10 keys", sortedInput(100, 50), 500, 1 << 30},
		{"sorted, byte-bound", sortedInput(100, 50), 1 << 30, 5000},
		{"sorted, buffer of one", sortedInput(5, 5), 1, 1 << 30},
		{"sorted, zero limits", sortedInput(5, 5), 0, 0},
		{"empty", nil, 10, 10},
		{"random keys", func() []kv {
			var in []kv
			for i := range 3000 {
				in = append(in, kv{fmt.Sprintf("K%d", r.IntN(40)), i})
			}
			return in
		}(), 64, 1 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read, emitted, maxHeld := 0, 0, 0
			src := func(yield func(kv) bool) {
				for _, e := range tt.in {
					read++
					maxHeld = max(maxHeld, read-emitted)
					if !yield(e) {
						return
					}
				}
			}
			var got []kv
			for e := range interleave(src, kvKey, kvSize, tt.maxItems, tt.maxByte, nil) {
				emitted++
				got = append(got, e)
			}
			// A permutation of the input, each key's elements in input order.
			perKey := func(s []kv) map[string][]int {
				m := map[string][]int{}
				for _, e := range s {
					m[e.k] = append(m[e.k], e.i)
				}
				return m
			}
			if diff := gocmp.Diff(perKey(tt.in), perKey(got)); diff != "" {
				t.Errorf("per-key sequences differ (-in +out):\n%s", diff)
			}
			limit := max(1, min(tt.maxItems, tt.maxByte/10))
			if maxHeld > limit {
				t.Errorf("held %d elements at once, want ≤ %d", maxHeld, limit)
			}
		})
	}
}

// Sorted input (the guide's U1#1…U1#100, U2#1…) comes out with no two
// neighbours sharing a key while at least two keys are buffered, i.e. except
// for the last key's tail.
func TestInterleaveSpreadsSortedInput(t *testing.T) {
	const keys, per = 100, 50
	got := slices.Collect(interleave(slices.Values(sortedInput(keys, per)), kvKey, kvSize, 500, 1<<30, nil))
	same := 0
	for i := 1; i < len(got); i++ {
		if got[i].k == got[i-1].k {
			same++
		}
	}
	if same > per-1 {
		t.Errorf("%d adjacent pairs share a key, want ≤ %d (the last key's tail)", same, per-1)
	}
	// Any 25 consecutive elements (one BatchWriteItem) away from the tail
	// touch 10 distinct keys: the number the 500-element buffer holds.
	for i := 0; i+25 <= len(got)-500; i += 25 {
		distinct := map[string]bool{}
		for _, e := range got[i : i+25] {
			distinct[e.k] = true
		}
		if len(distinct) < 10 {
			t.Fatalf("batch at %d touches %d keys, want ≥ 10", i, len(distinct))
		}
	}
}

func TestInterleaveBreak(t *testing.T) {
	read := 0
	src := func(yield func(kv) bool) {
		for _, e := range sortedInput(10, 10) {
			read++
			if !yield(e) {
				return
			}
		}
	}
	var got, dropped []kv
	for e := range interleave(src, kvKey, kvSize, 5, 1<<30, func(e kv) { dropped = append(dropped, e) }) {
		got = append(got, e)
		if len(got) == 3 {
			break
		}
	}
	if read > 8 {
		t.Errorf("read %d elements to emit 3 with a buffer of 5", read)
	}
	// Every element read is either yielded or dropped, exactly once.
	all := append(append([]kv(nil), got...), dropped...)
	slices.SortFunc(all, func(a, b kv) int { return cmp.Compare(a.k+fmt.Sprint(a.i), b.k+fmt.Sprint(b.i)) })
	want := sortedInput(10, 10)[:read]
	slices.SortFunc(want, func(a, b kv) int { return cmp.Compare(a.k+fmt.Sprint(a.i), b.k+fmt.Sprint(b.i)) })
	if diff := gocmp.Diff(want, all, gocmp.AllowUnexported(kv{})); diff != "" {
		t.Errorf("yielded+dropped != read (-want +got):\n%s", diff)
	}
}

func TestFifoCompacts(t *testing.T) {
	var q fifo[int]
	for i := range 10000 {
		q.push(i)
		q.push(i)
		q.pop()
	}
	if q.len() != 10000 {
		t.Fatalf("len %d, want 10000", q.len())
	}
	if cap(q.buf) > 4*10000 {
		t.Errorf("backing array %d for 10000 elements", cap(q.buf))
	}
	for i := range 10000 {
		if got, want := q.pop(), 5000+i/2; got != want {
			t.Fatalf("pop %d = %d, want %d", i, got, want)
		}
	}
}
