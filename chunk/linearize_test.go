package chunk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// This file checks histories of a single register for linearizability.
//
// Every write writes a unique value, so each read names the write it saw,
// and the check is the Gibbons–Korach zone test (SIAM J. Comput. 26(4),
// 1997; as stated by Golab, Li and Shah, PODC 2011), O(n log n) instead of
// porcupine's search. A cluster is a write and the reads that returned its
// value; its zone runs from the earliest response in the cluster to the
// latest invocation. If the earliest response comes first the zone is
// forward: the write's value must stay current across all of it. The history
// is linearizable iff no read returns before its write is invoked, no two
// forward zones overlap, and no backward zone lies inside a forward one.
// TestCheckerMatchesBruteForce holds the checker to an exhaustive search.

// regOp is one operation on a register.
type regOp struct {
	write bool
	value string // written or read; "" is the initial state (no payload)
	call  int64
	ret   int64 // math.MaxInt64 for a write whose outcome is unknown
	// failed marks a write known not to have taken effect (ErrConflict).
	failed bool
}

func (o regOp) String() string {
	kind := "read"
	if o.write {
		kind = "write"
	}
	ret := fmt.Sprint(o.ret)
	if o.ret == math.MaxInt64 {
		ret = "?"
	}
	return fmt.Sprintf("%s(%q)[%d,%s]", kind, o.value, o.call, ret)
}

// checkRegister returns nil if the history is linearizable, else an error
// naming a witness.
func checkRegister(ops []regOp) error {
	writes := map[string]regOp{"": {write: true, call: math.MinInt64, ret: math.MinInt64}}
	for _, o := range ops {
		if o.write {
			if _, dup := writes[o.value]; dup {
				return fmt.Errorf("value %q written twice", o.value)
			}
			writes[o.value] = o
		}
	}
	type zone struct {
		lo, hi  int64 // earliest response, latest invocation
		forward bool
		value   string
	}
	clusters := map[string]*zone{}
	for _, o := range ops {
		if o.write {
			continue
		}
		w, ok := writes[o.value]
		switch {
		case !ok:
			return fmt.Errorf("%v returned a value nobody wrote", o)
		case w.failed:
			return fmt.Errorf("%v returned the value of %v, which failed", o, w)
		case o.ret < w.call:
			return fmt.Errorf("%v returned before %v was invoked", o, w)
		}
		z := clusters[o.value]
		if z == nil {
			z = &zone{lo: w.ret, hi: w.call, value: o.value}
			clusters[o.value] = z
		}
		z.lo = min(z.lo, o.ret)
		z.hi = max(z.hi, o.call)
	}
	// A completed write nobody read is a cluster of its own: its value
	// must still fit between the others. An unread write of unknown outcome
	// may never have happened and imposes nothing.
	for v, w := range writes {
		if clusters[v] == nil && !w.failed && w.ret != math.MaxInt64 && v != "" {
			clusters[v] = &zone{lo: w.ret, hi: w.call, value: v}
		}
	}
	var fwd, bwd []zone
	for _, z := range clusters {
		z.forward = z.lo < z.hi
		if z.forward {
			fwd = append(fwd, *z)
		} else {
			bwd = append(bwd, *z)
		}
	}
	sort.Slice(fwd, func(i, j int) bool { return fwd[i].lo < fwd[j].lo })
	for i := 1; i < len(fwd); i++ {
		if fwd[i].lo < fwd[i-1].hi {
			return fmt.Errorf("values %q and %q were both current over [%d,%d] and [%d,%d]",
				fwd[i-1].value, fwd[i].value, fwd[i-1].lo, fwd[i-1].hi, fwd[i].lo, fwd[i].hi)
		}
	}
	for _, b := range bwd {
		// Backward zone [hi, lo]; find the forward zone starting before it.
		i := sort.Search(len(fwd), func(i int) bool { return fwd[i].lo >= b.hi }) - 1
		if i >= 0 && fwd[i].lo < b.hi && b.lo < fwd[i].hi {
			return fmt.Errorf("value %q was current inside [%d,%d], where %q had to be",
				b.value, b.hi, b.lo, fwd[i].value)
		}
	}
	return nil
}

// bruteForce searches every order of the operations that respects real
// time for one in which each read returns the latest write. Writes of
// unknown outcome may be left out.
func bruteForce(ops []regOp) bool {
	var live []regOp
	var unknown []int
	for _, o := range ops {
		if o.failed {
			continue
		}
		if o.write && o.ret == math.MaxInt64 {
			unknown = append(unknown, len(live))
		}
		live = append(live, o)
	}
	for mask := 0; mask < 1<<len(unknown); mask++ {
		var sub []regOp
		skip := map[int]bool{}
		for b, i := range unknown {
			if mask&(1<<b) != 0 {
				skip[i] = true
			}
		}
		for i, o := range live {
			if !skip[i] {
				sub = append(sub, o)
			}
		}
		if search(sub, make([]bool, len(sub)), "", 0) {
			return true
		}
	}
	return false
}

func search(ops []regOp, done []bool, cur string, n int) bool {
	if n == len(ops) {
		return true
	}
	// The earliest response among pending operations: whatever goes next
	// must have been invoked before it.
	minRet := int64(math.MaxInt64)
	for i, o := range ops {
		if !done[i] {
			minRet = min(minRet, o.ret)
		}
	}
	for i, o := range ops {
		if done[i] || o.call > minRet {
			continue
		}
		next := cur
		if o.write {
			next = o.value
		} else if o.value != cur {
			continue
		}
		done[i] = true
		ok := search(ops, done, next, n+1)
		done[i] = false
		if ok {
			return true
		}
	}
	return false
}

// randomHistory runs a register with random overlapping operations; with
// probability corrupt, one read is given another value afterwards.
func randomHistory(r *rand.Rand, n int, corrupt float64) []regOp {
	type ev struct {
		op  int
		lin int64
	}
	ops := make([]regOp, n)
	var lins []ev
	writes := 0
	for i := range ops {
		call := r.Int64N(30)
		ret := call + 1 + r.Int64N(12)
		ops[i] = regOp{write: r.IntN(2) == 0, call: call*100 + int64(i), ret: ret*100 + int64(i)}
		lins = append(lins, ev{i, ops[i].call + r.Int64N(ops[i].ret-ops[i].call)})
		if ops[i].write {
			writes++
			ops[i].value = fmt.Sprintf("w%d", i)
		}
	}
	slices.SortFunc(lins, func(a, b ev) int { return int(a.lin - b.lin) })
	cur := ""
	for _, e := range lins {
		o := &ops[e.op]
		if o.write {
			switch r.IntN(8) {
			case 0: // took effect, response lost
				o.ret = math.MaxInt64
			case 1: // failed, and known to have failed
				o.failed = true
				continue
			}
			cur = o.value
		} else {
			o.value = cur
		}
	}
	for i := range ops {
		if ops[i].write && !ops[i].failed && ops[i].ret != math.MaxInt64 && r.IntN(10) == 0 {
			ops[i].ret = math.MaxInt64 // did take effect; the writer never heard
		}
	}
	if r.Float64() < corrupt {
		var reads []int
		for i, o := range ops {
			if !o.write {
				reads = append(reads, i)
			}
		}
		if len(reads) > 0 {
			vals := []string{""}
			for _, o := range ops {
				if o.write {
					vals = append(vals, o.value)
				}
			}
			ops[reads[r.IntN(len(reads))]].value = vals[r.IntN(len(vals))]
		}
	}
	return ops
}

func TestCheckerMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var agreeOK, agreeBad int
	for i := 0; i < 20000; i++ {
		h := randomHistory(r, 2+r.IntN(6), 0.5)
		got := checkRegister(h) == nil
		want := bruteForce(h)
		if got != want {
			t.Fatalf("history %v: checker says linearizable=%v (%v), exhaustive search says %v", h, got, checkRegister(h), want)
		}
		if want {
			agreeOK++
		} else {
			agreeBad++
		}
	}
	// Both kinds must have been exercised for the agreement to mean much.
	if agreeOK < 1000 || agreeBad < 1000 {
		t.Errorf("linearizable %d, not %d: too lopsided a sample", agreeOK, agreeBad)
	}
}

func TestCheckerExamples(t *testing.T) {
	u := int64(math.MaxInt64)
	tests := []struct {
		name string
		ops  []regOp
		ok   bool
	}{
		{"sequential", []regOp{{write: true, value: "a", call: 1, ret: 2}, {value: "a", call: 3, ret: 4}}, true},
		{"stale read", []regOp{{write: true, value: "a", call: 1, ret: 2}, {write: true, value: "b", call: 3, ret: 4}, {value: "a", call: 5, ret: 6}}, false},
		{"read from the future", []regOp{{value: "a", call: 1, ret: 2}, {write: true, value: "a", call: 3, ret: 4}}, false},
		{"failed write seen", []regOp{{write: true, value: "a", call: 1, ret: 2, failed: true}, {value: "a", call: 3, ret: 4}}, false},
		{"unknown write seen later", []regOp{{write: true, value: "a", call: 1, ret: u}, {value: "a", call: 30, ret: 40}}, true},
		{"new-old inversion", []regOp{{write: true, value: "a", call: 1, ret: 10}, {value: "a", call: 2, ret: 3}, {value: "", call: 4, ret: 5}}, false},
		{"initial while writing", []regOp{{write: true, value: "a", call: 1, ret: 10}, {value: "", call: 2, ret: 3}, {value: "a", call: 4, ret: 5}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRegister(tt.ops)
			if (err == nil) != tt.ok || bruteForce(tt.ops) != tt.ok {
				t.Errorf("got %v (search %v), want linearizable=%v", err, bruteForce(tt.ops), tt.ok)
			}
		})
	}
}
