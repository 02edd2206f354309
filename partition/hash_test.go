package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/shard"
)

const q = 1 << 62 // a quarter of the key-hash space

// The guide's worked examples again, now with the ranges each partition
// holds.
func TestLayoutRanges(t *testing.T) {
	four := mustLayout(t, 5000, 2000, 0)
	want := []Range{{0, q - 1}, {q, 2*q - 1}, {2 * q, 3*q - 1}, {3 * q, math.MaxUint64}}
	if diff := cmp.Diff(want, four.Ranges); diff != "" {
		t.Errorf("NewLayout ranges (-want +got):\n%s", diff)
	}
	t.Run("doubling halves every range in place", func(t *testing.T) {
		got := mustProvision(t, four, 8000, 2000).Ranges
		var want []Range
		for _, r := range four.Ranges {
			mid := r.Start + q/2
			want = append(want, Range{r.Start, mid - 1}, Range{mid, r.End})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("lowering keeps the ranges", func(t *testing.T) {
		if diff := cmp.Diff(four.Ranges, mustProvision(t, four, 100, 100).Ranges); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a split keeps the lower half at i and appends the upper", func(t *testing.T) {
		got, err := four.Split(1)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(four.Ranges)
		want[1] = Range{q, q + q/2 - 1}
		want = append(want, Range{q + q/2, 2*q - 1})
		if diff := cmp.Diff(want, got.Ranges); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if f := got.Ranges[1].Fraction(); f != 0.125 {
			t.Errorf("child's share of the space: got %v, want 0.125", f)
		}
	})
}

func TestFind(t *testing.T) {
	four := mustLayout(t, 5000, 2000, 0)
	for _, tc := range []struct {
		h    uint64
		want int
	}{{0, 0}, {q - 1, 0}, {q, 1}, {3*q - 1, 2}, {3 * q, 3}, {math.MaxUint64, 3}} {
		if got := four.Find(tc.h); got != tc.want {
			t.Errorf("Find(%#x): got %d, want %d", tc.h, got, tc.want)
		}
	}
	if got := (Layout{}).Find(0); got != -1 {
		t.Errorf("zero Layout: Find(0) = %d, want -1", got)
	}
	// A hand-built Layout without ranges is an even split.
	byHand := Layout{Partitions: four.Partitions}
	if got := byHand.Find(3 * q); got != 3 {
		t.Errorf("Layout without Ranges: Find(3q) = %d, want 3", got)
	}
	split, err := byHand.Split(0)
	if err != nil {
		t.Fatal(err)
	}
	if got := split.Find(q / 2); got != 4 {
		t.Errorf("Split(0) of a Layout without Ranges: Find(q/2) = %d, want 4", got)
	}
}

func TestSplitLimits(t *testing.T) {
	one := Layout{Partitions: []Partition{{RCU: 1, WCU: 1}}, Ranges: []Range{{7, 7}}}
	if _, err := one.Split(0); !errors.Is(err, ErrWorkload) {
		t.Errorf("Split of a one-hash range: %v, want ErrWorkload", err)
	}
	if _, err := one.Provision(0, 2000); !errors.Is(err, ErrWorkload) {
		t.Errorf("doubling a one-hash range: %v, want ErrWorkload", err)
	}
	full := even(MaxPartitions, 0, 0)
	if _, err := full.Split(0); !errors.Is(err, ErrWorkload) {
		t.Errorf("Split at MaxPartitions: %v, want ErrWorkload", err)
	}
}

func TestKeyHash(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	must := func(v types.AttributeValue) uint64 {
		t.Helper()
		h, err := KeyHash(v)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// md5("a") = 0cc175b9c0f1b6a831c399e269772661: the hash is fixed.
	if got := must(s("a")); got != 0x0cc175b9c0f1b6a8 {
		t.Errorf(`KeyHash(S "a") = %#x, want 0x0cc175b9c0f1b6a8`, got)
	}
	if got, want := must(&types.AttributeValueMemberB{Value: []byte("a")}), must(s("a")); got != want {
		t.Errorf(`KeyHash(B "a") = %#x, want the S hash %#x (raw bytes)`, got, want)
	}
	for _, v := range []string{"125.0", "1.25e2", "0125", "1250E-1"} {
		if got, want := must(n(v)), must(n("125")); got != want {
			t.Errorf("KeyHash(N %q) = %#x, want %#x (same number as 125)", v, got, want)
		}
	}
	if must(n("125")) != must(s("1.25E+2")) || must(n("125")) == must(s("125")) {
		t.Errorf("N is hashed as its canonical decimal, 1.25E+2")
	}
	for _, v := range []types.AttributeValue{n("x"), &types.AttributeValueMemberBOOL{Value: true}, nil} {
		_, err := KeyHash(v)
		if !errors.Is(err, ErrKey) || !errors.Is(err, errs.Invalid) {
			t.Errorf("KeyHash(%#v): %v, want ErrKey in the invalid family", v, err)
		}
	}
}

// TestKeyHashSpreads: 200,000 typical ids over the bulk-load table's 11
// partitions land within 2 % of an even share (a fixed key set, so the
// figure is the same on every run).
func TestKeyHashSpreads(t *testing.T) {
	l := mustLayout(t, 0, 11000, 0)
	count := make([]int, l.Len())
	const ids = 200_000
	for i := range ids {
		h, err := KeyHash(&types.AttributeValueMemberS{Value: fmt.Sprintf("user%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		count[l.Find(h)]++
	}
	mean := float64(ids) / float64(l.Len())
	if got := float64(slices.Max(count)) / mean; got > 1.02 {
		t.Errorf("max/mean load over %d partitions: got %.3f, want <= 1.02 (%v)", l.Len(), got, count)
	}
}

// checkTiles fails unless l's ranges tile the key-hash space and Find
// agrees with them.
func checkTiles(t *testing.T, l Layout, probes ...uint64) {
	t.Helper()
	if len(l.Ranges) != len(l.Partitions) {
		t.Fatalf("%d ranges for %d partitions", len(l.Ranges), len(l.Partitions))
	}
	sorted := slices.Clone(l.Ranges)
	slices.SortFunc(sorted, func(a, b Range) int { return cmpUint(a.Start, b.Start) })
	next, sum := uint64(0), 0.0
	for i, r := range sorted {
		if r.Start != next || r.End < r.Start || (i > 0 && r.Start == 0) {
			t.Fatalf("ranges do not tile the space at %v (sorted: %v)", r, sorted)
		}
		next, sum = r.End+1, sum+r.Fraction()
	}
	if sorted[len(sorted)-1].End != math.MaxUint64 || math.Abs(sum-1) > 1e-9 {
		t.Fatalf("ranges end at %#x and cover %v of the space", sorted[len(sorted)-1].End, sum)
	}
	for _, r := range l.Ranges {
		probes = append(probes, r.Start, r.End, r.Start+(r.End-r.Start)/2)
	}
	for _, h := range probes {
		i := l.Find(h)
		if i < 0 || !l.Ranges[i].Contains(h) {
			t.Fatalf("Find(%#x) = %d, whose range does not hold it", h, i)
		}
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// FuzzLayout plays a random sequence of NewLayout, Provision and Split and
// checks the invariants after each step: the ranges tile the space, Find
// names the partition holding a hash, Split keeps the total throughput and
// halves its partition, Provision sets the requested total and only ever
// doubles, and no method modifies its receiver.
func FuzzLayout(f *testing.F) {
	f.Add([]byte{5, 2, 0, 1, 0, 3, 1, 200, 0, 0})
	f.Add([]byte{0, 11, 1, 0, 0, 0, 0, 0, 1, 40, 0, 2})
	f.Add([]byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 90})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) < 2 {
			return
		}
		l := mustLayout(t, 1000*float64(ops[0]%16), 1000*float64(ops[1]%16), 0)
		checkTiles(t, l)
		for i := 2; i+1 < len(ops) && l.Len() < 512; i += 2 {
			prev, snap := l, cloneLayout(l)
			if ops[i]%2 == 0 {
				l = fuzzSplit(t, l, int(ops[i+1])%l.Len())
			} else {
				l = fuzzProvision(t, l, float64(ops[i+1]))
			}
			if diff := cmp.Diff(snap, prev); diff != "" {
				t.Fatalf("receiver modified (-before +after):\n%s", diff)
			}
			checkTiles(t, l, binary.BigEndian.Uint64(append(slices.Clone(ops[i:]), make([]byte, 8)...)))
		}
	})
}

func cloneLayout(l Layout) Layout {
	return Layout{Partitions: slices.Clone(l.Partitions), Ranges: slices.Clone(l.Ranges)}
}

func fuzzSplit(t *testing.T, l Layout, i int) Layout {
	t.Helper()
	r0, w0 := l.Total()
	got, err := l.Split(i)
	if l.Ranges[i].Start == l.Ranges[i].End {
		if !errors.Is(err, ErrWorkload) {
			t.Fatalf("Split(%d) of the one-hash range %v: %v, want ErrWorkload", i, l.Ranges[i], err)
		}
		return l
	}
	if err != nil {
		t.Fatalf("Split(%d) of %d: %v", i, l.Len(), err)
	}
	r1, w1 := got.Total()
	if math.Abs(r1-r0) > 1e-6*(1+r0) || math.Abs(w1-w0) > 1e-6*(1+w0) {
		t.Fatalf("Split changed the total from %v/%v to %v/%v", r0, w0, r1, w1)
	}
	lo, hi := got.Ranges[i], got.Ranges[got.Len()-1]
	if lo.Start != l.Ranges[i].Start || hi.End != l.Ranges[i].End || lo.End+1 != hi.Start {
		t.Fatalf("Split(%d) of %v gave %v and %v", i, l.Ranges[i], lo, hi)
	}
	if got.Partitions[i].WCU != l.Partitions[i].WCU/2 || got.Partitions[got.Len()-1] != got.Partitions[i] {
		t.Fatalf("Split(%d): children %v and %v of %v", i, got.Partitions[i], got.Partitions[got.Len()-1], l.Partitions[i])
	}
	return got
}

func fuzzProvision(t *testing.T, l Layout, x float64) Layout {
	t.Helper()
	rcu, wcu := 150*x, 40*x
	got, err := l.Provision(rcu, wcu)
	if err != nil {
		t.Fatalf("Provision(%v, %v) of %d: %v", rcu, wcu, l.Len(), err)
	}
	need := mustTP(t, rcu, wcu)
	n := got.Len()
	if n < l.Len() || n%l.Len() != 0 || (n/l.Len())&(n/l.Len()-1) != 0 || (n > l.Len() && n/2 >= need) {
		t.Fatalf("Provision for %d partitions took %d to %d", need, l.Len(), n)
	}
	if r, w := got.Total(); math.Abs(r-rcu) > 1e-6*(1+rcu) || math.Abs(w-wcu) > 1e-6*(1+wcu) {
		t.Fatalf("Provision(%v, %v) total %v/%v", rcu, wcu, r, w)
	}
	return got
}

// TestMaxNIsShardMaxN: Recommend's bound restates shard.MaxN.
func TestMaxNIsShardMaxN(t *testing.T) {
	if maxN != shard.MaxN {
		t.Errorf("maxN = %d, want shard.MaxN = %d", maxN, shard.MaxN)
	}
}

// TestErrorsAreInvalidInput: the errors of bad input to the planner match
// the invalid-input family (dynashard.ErrInvalid), as every package's do.
func TestErrorsAreInvalidInput(t *testing.T) {
	for _, err := range []error{ErrWorkload, ErrNoPartition, ErrKey} {
		if !errors.Is(err, errs.Invalid) {
			t.Errorf("%v does not match ErrInvalid", err)
		}
	}
	if _, err := Recommend(Workload{WritesPerSecond: -1}); !errors.Is(err, errs.Invalid) {
		t.Errorf("Recommend of a negative rate: %v, want ErrInvalid", err)
	}
}
