package partition

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func parts(spec ...float64) []Partition {
	var p []Partition
	for i := 0; i < len(spec); i += 3 {
		for range int(spec[i]) {
			p = append(p, Partition{RCU: spec[i+1], WCU: spec[i+2]})
		}
	}
	return p
}

var approx = cmpopts.EquateApprox(0, 1e-9)

// The worked examples of the DynamoDB developer guide (the split one is
// also in the README's "Which strategy").
func TestLayoutWorkedExamples(t *testing.T) {
	const gb = 1 << 30
	t.Run("1000 RCU 500 WCU is one partition", func(t *testing.T) {
		got := mustLayout(t, 1000, 500, 0)
		if diff := cmp.Diff(parts(1, 1000, 500), got.Partitions, approx); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("1000 RCU 1000 WCU is two of 500/500", func(t *testing.T) {
		if got := mustTP(t, 1000, 1000); got != 2 {
			t.Errorf("ThroughputPartitions = %d, want 2", got)
		}
		got := mustLayout(t, 1000, 1000, 0)
		if diff := cmp.Diff(parts(2, 500, 500), got.Partitions, approx); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	four := mustLayout(t, 5000, 2000, 0)
	t.Run("5000 RCU 2000 WCU is four of 1250/500", func(t *testing.T) {
		if diff := cmp.Diff(parts(4, 1250, 500), four.Partitions, approx); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("raising to 8000 RCU doubles to eight of 1000/250", func(t *testing.T) {
		got := mustProvision(t, four, 8000, 2000)
		if diff := cmp.Diff(parts(8, 1000, 250), got.Partitions, approx); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a split of one of four gives three 1250/500 and two 625/250", func(t *testing.T) {
		got, err := four.Split(1)
		if err != nil {
			t.Fatal(err)
		}
		want := parts(1, 1250, 500, 1, 625, 250, 2, 1250, 500, 1, 625, 250)
		if diff := cmp.Diff(want, got.Partitions, approx); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		r, w := got.Total()
		if r != 5000 || w != 2000 {
			t.Errorf("total after split = %v/%v, want 5000/2000", r, w)
		}
		if diff := cmp.Diff(parts(4, 1250, 500), four.Partitions, approx); diff != "" {
			t.Errorf("Split modified its receiver (-want +got):\n%s", diff)
		}
	})
	t.Run("20 GB bulk load at 11000 WCU then 200 WCU", func(t *testing.T) {
		if got := mustSP(t, 20*gb); got != 2 {
			t.Errorf("mustSP(t, 20 GB) = %d, want 2", got)
		}
		load := mustLayout(t, 0, 11000, 20*gb)
		if load.Len() != 11 {
			t.Fatalf("bulk-load layout has %d partitions, want 11", load.Len())
		}
		after := mustProvision(t, load, 0, 200)
		if after.Len() != 11 {
			t.Errorf("after lowering: %d partitions, want 11 (never merged)", after.Len())
		}
		for _, p := range after.Partitions {
			if math.Abs(p.WCU-200.0/11) > 1e-9 || math.Round(p.WCU) != 18 {
				t.Errorf("per-partition WCU %v, want 200/11 ≈ 18", p.WCU)
			}
		}
	})
}

func TestPartitionFormulas(t *testing.T) {
	tests := []struct {
		rcu, wcu float64
		bytes    int64
		tp, sp   int
	}{
		{0, 0, 0, 1, 1},
		{3000, 0, 0, 1, 1},
		{3001, 0, 0, 2, 1},
		{0, 1000, 0, 1, 1},
		{0, 1000.5, 0, 2, 1},
		{1500, 500, 0, 1, 1},           // 0.5 + 0.5 exactly
		{1000, 1000 * 2. / 3, 0, 1, 1}, // 1/3 + 2/3 in floating point
		{0, 0, PartitionBytes, 1, 1},
		{0, 0, PartitionBytes + 1, 1, 2},
		{0, 0, 55 << 30, 1, 6},
	}
	for _, tt := range tests {
		if got := mustTP(t, tt.rcu, tt.wcu); got != tt.tp {
			t.Errorf("ThroughputPartitions(%v, %v) = %d, want %d", tt.rcu, tt.wcu, got, tt.tp)
		}
		if got := mustSP(t, tt.bytes); got != tt.sp {
			t.Errorf("SizePartitions(%d) = %d, want %d", tt.bytes, got, tt.sp)
		}
		if got := mustLayout(t, tt.rcu, tt.wcu, tt.bytes).Len(); got != max(tt.tp, tt.sp) {
			t.Errorf("NewLayout(%v, %v, %d).Len() = %d, want %d", tt.rcu, tt.wcu, tt.bytes, got, max(tt.tp, tt.sp))
		}
	}
}

func TestProvision(t *testing.T) {
	one := mustLayout(t, 100, 100, 0)
	// From 1 partition to a need of 5: 1 → 2 → 4 → 8.
	if got := mustProvision(t, one, 0, 4500).Len(); got != 8 {
		t.Errorf("Provision to 4500 WCU: %d partitions, want 8", got)
	}
	// Enough partitions already: no change in count.
	if got := mustProvision(t, mustLayout(t, 0, 4000, 0), 0, 3000).Len(); got != 4 {
		t.Errorf("lowering: %d partitions, want 4", got)
	}
	var zero Layout
	if got := mustProvision(t, zero, 10, 10).Len(); got != 1 {
		t.Errorf("zero Layout provisioned: %d partitions, want 1", got)
	}
	if _, err := one.Split(1); !errors.Is(err, ErrNoPartition) {
		t.Errorf("Split(1) of one partition: %v, want ErrNoPartition", err)
	}
	if _, err := one.Split(-1); !errors.Is(err, ErrNoPartition) {
		t.Errorf("Split(-1): %v, want ErrNoPartition", err)
	}
}

func TestRecommend(t *testing.T) {
	tests := []struct {
		name string
		w    Workload
	}{
		{"idle", Workload{}},
		{"small", Workload{WritesPerSecond: 300}},
		{"guide-sized", Workload{WritesPerSecond: 50000, ItemBytes: 700, ReadsPerSecond: 2}},
		{"big items", Workload{WritesPerSecond: 2000, ItemBytes: 3000, ReadsPerSecond: 1, ReadBytes: 64 << 20, Consistent: true}},
		{"tight", Workload{WritesPerSecond: 4000, Utilization: 1}},
		{"exact multiple", Workload{WritesPerSecond: 1500, ItemBytes: 1024}},
		{"read heavy", Workload{WritesPerSecond: 100, ReadsPerSecond: 10000, ReadBytes: 40 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Recommend(tt.w)
			if err != nil {
				t.Fatal(err)
			}
			// Reference model, stated independently of the implementation:
			// the smallest N with each key's WCU within the utilisation.
			util := tt.w.Utilization
			if util == 0 {
				util = 0.5
			}
			item := tt.w.ItemBytes
			if item == 0 {
				item = 1024
			}
			wcuPer := math.Ceil(float64(item) / 1024)
			wcu := tt.w.WritesPerSecond * wcuPer
			n := 1
			for wcu/float64(n) > util*1000 {
				n++
			}
			if got.N != n || float64(got.WCUPerWrite) != wcuPer {
				t.Errorf("N = %d, WCU/write = %d; want %d, %v", got.N, got.WCUPerWrite, n, wcuPer)
			}
			if got.WCUPerKey > util*1000 {
				t.Errorf("WCUPerKey %v over %v", got.WCUPerKey, util*1000)
			}
			unit := 0.5
			if tt.w.Consistent {
				unit = 1
			}
			perQuery := math.Max(1, math.Ceil(float64(tt.w.ReadBytes)/float64(n)/4096)) * unit
			if got.QueriesPerRead != n || math.Abs(got.RCUPerRead-float64(n)*perQuery) > 1e-9 {
				t.Errorf("fan-out %d queries %v RCU; want %d, %v", got.QueriesPerRead, got.RCUPerRead, n, float64(n)*perQuery)
			}
			if got.WithinReadLimit != (tt.w.ReadsPerSecond*perQuery <= 3000) {
				t.Errorf("WithinReadLimit = %v with %v RCU/s per key", got.WithinReadLimit, got.ReadRCUPerKey)
			}
			if got.Explanation == "" {
				t.Error("empty explanation")
			}
		})
	}
	for _, w := range []Workload{
		{WritesPerSecond: -1},
		{WritesPerSecond: math.NaN()},
		{WritesPerSecond: math.Inf(1)},
		{WritesPerSecond: 1, Utilization: 1.5},
		{WritesPerSecond: 1e9},
	} {
		if _, err := Recommend(w); !errors.Is(err, ErrWorkload) {
			t.Errorf("Recommend(%+v) = %v, want ErrWorkload", w, err)
		}
	}
}

func mustLayout(t *testing.T, rcu, wcu float64, bytes int64) Layout {
	t.Helper()
	l, err := NewLayout(rcu, wcu, bytes)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustProvision(t *testing.T, l Layout, rcu, wcu float64) Layout {
	t.Helper()
	l, err := l.Provision(rcu, wcu)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustTP(t *testing.T, rcu, wcu float64) int {
	t.Helper()
	n, err := ThroughputPartitions(rcu, wcu)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustSP(t *testing.T, bytes int64) int {
	t.Helper()
	n, err := SizePartitions(bytes)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPlanningBounds: figures that would overflow or build absurd layouts
// are refused with ErrWorkload instead of answering nonsense.
func TestPlanningBounds(t *testing.T) {
	if _, err := ThroughputPartitions(1e300, 0); !errors.Is(err, ErrWorkload) {
		t.Errorf("ThroughputPartitions(1e300, 0): %v, want ErrWorkload", err)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := ThroughputPartitions(0, bad); !errors.Is(err, ErrWorkload) {
			t.Errorf("ThroughputPartitions(0, %v): %v, want ErrWorkload", bad, err)
		}
	}
	if _, err := SizePartitions(-1); !errors.Is(err, ErrWorkload) {
		t.Errorf("SizePartitions(-1): %v, want ErrWorkload", err)
	}
	if _, err := SizePartitions(math.MaxInt64); !errors.Is(err, ErrWorkload) {
		t.Errorf("SizePartitions(MaxInt64): %v, want ErrWorkload", err)
	}
	if _, err := mustLayout(t, 1, 1, 0).Provision(1e12, 0); !errors.Is(err, ErrWorkload) {
		t.Errorf("Provision(1e12, 0): %v, want ErrWorkload", err)
	}
	for _, w := range []Workload{
		{WritesPerSecond: 1000, Utilization: 1e-300},
		{WritesPerSecond: 1e300},
		{WritesPerSecond: 10, ItemBytes: math.MaxInt},
	} {
		if r, err := Recommend(w); !errors.Is(err, ErrWorkload) {
			t.Errorf("Recommend(%+v) = N %d, %v; want ErrWorkload", w, r.N, err)
		}
	}
}
