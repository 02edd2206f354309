package partition

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The guide's bulk-load example: 20,000,000 items of 1 KB in 30 minutes
// need 11,000 WCU and 11 partitions; lowered to 200 WCU, each keeps about
// 18; over 3 hours, 1,900 WCU and 2 partitions would do.
func TestPlanBulkLoadGuide(t *testing.T) {
	p, err := PlanBulkLoad(BulkLoad{Items: 20_000_000, ItemBytes: 1024, Duration: 30 * time.Minute, SteadyWCU: 200})
	if err != nil {
		t.Fatal(err)
	}
	if p.WCUPerItem != 1 || p.TotalWCU != 20_000_000 || p.Bytes != 20_000_000*1024 {
		t.Errorf("units %d, total %v, bytes %d; want 1, 2e7, 2.048e10", p.WCUPerItem, p.TotalWCU, p.Bytes)
	}
	if math.Abs(p.Rate-20_000_000.0/1800) > 1e-6 || p.WCU != 11_000 || p.Load.Len() != 11 {
		t.Errorf("rate %v, WCU %v, %d partitions; want 11111.1, 11000, 11", p.Rate, p.WCU, p.Load.Len())
	}
	if want := time.Duration(math.Ceil(20_000_000.0/11_000)) * time.Second; p.LoadTime != want {
		t.Errorf("LoadTime = %v, want %v", p.LoadTime, want)
	}
	if p.Steady.Len() != 11 || math.Round(p.Steady.MinWCU()) != 18 || p.Fresh.Len() != 2 || !p.Diluted {
		t.Errorf("steady %d partitions of %v WCU, fresh %d, diluted %v; want 11 of ~18, 2, true",
			p.Steady.Len(), p.Steady.MinWCU(), p.Fresh.Len(), p.Diluted)
	}
	if p.MinDuration != 10_000*time.Second {
		t.Errorf("MinDuration = %v, want 2h46m40s (20,000,000 WCU at 2,000 WCU/s)", p.MinDuration)
	}
	s := p.Slower
	if s == nil {
		t.Fatal("no slower alternative")
	}
	if s.WCU != 1900 || s.Load.Len() != 2 || s.Steady.Len() != 2 || s.Steady.MinWCU() != 100 || s.Diluted || s.Slower != nil {
		t.Errorf("slower: %v WCU, %d partitions, steady %d of %v, diluted %v; want 1900, 2, 2 of 100, false",
			s.WCU, s.Load.Len(), s.Steady.Len(), s.Steady.MinWCU(), s.Diluted)
	}
	if math.Abs(s.Rate-20_000_000.0/(3*3600)) > 1e-6 {
		t.Errorf("slower rate %v, want the 3 h rate", s.Rate)
	}
}

func TestPlanBulkLoad(t *testing.T) {
	t.Run("no steady state", func(t *testing.T) {
		p, err := PlanBulkLoad(BulkLoad{Items: 1000, Duration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if p.Steady.Len() != 0 || p.Fresh.Len() != 0 || p.Diluted || p.Slower != nil {
			t.Errorf("got a steady state without SteadyWCU: %+v", p)
		}
	})
	t.Run("a load that fits is not diluted", func(t *testing.T) {
		p, err := PlanBulkLoad(BulkLoad{Items: 600_000, Duration: time.Hour, SteadyWCU: 100})
		if err != nil {
			t.Fatal(err)
		}
		if p.Load.Len() != 1 || p.Diluted || p.Slower != nil {
			t.Errorf("%d partitions, diluted %v, slower %v; want 1, false, nil", p.Load.Len(), p.Diluted, p.Slower)
		}
	})
	t.Run("large items cost a unit per started KB", func(t *testing.T) {
		p, err := PlanBulkLoad(BulkLoad{Items: 100, ItemBytes: 2049, Duration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if p.WCUPerItem != 3 || p.Rate != 300 || p.WCU != 300 {
			t.Errorf("%d units per item at %v WCU/s, provisioned %v; want 3, 300, 300", p.WCUPerItem, p.Rate, p.WCU)
		}
	})
	t.Run("rounding never adds a partition", func(t *testing.T) {
		// Rounding to two significant figures may round up (1,852 →
		// 1,900): over a grid of rates and RCU, the provisioned WCU never
		// needs more partitions than the rate itself.
		for rcu := 0.0; rcu <= 3000; rcu += 500 {
			for rate := 1.0; rate < 30_000; rate *= 1.07 {
				items := int64(rate * 3600)
				p, err := PlanBulkLoad(BulkLoad{Items: items, Duration: time.Hour, RCU: rcu})
				if err != nil {
					t.Fatal(err)
				}
				need, _ := ThroughputPartitions(rcu, p.Rate)
				got, _ := ThroughputPartitions(rcu, p.WCU)
				if got > need || p.WCU < 1 || p.WCU != math.Trunc(p.WCU) {
					t.Fatalf("rcu %v rate %v: provisioned %v needs %d partitions, the rate %d", rcu, p.Rate, p.WCU, got, need)
				}
			}
		}
	})
	t.Run("the slower load is never diluted", func(t *testing.T) {
		for _, b := range []BulkLoad{
			{Items: 20_000_000, Duration: 30 * time.Minute, SteadyWCU: 200},
			{Items: 20_000_000, Duration: 30 * time.Minute, SteadyWCU: 200, RCU: 1000},
			{Items: 5_000_000, ItemBytes: 3000, Duration: 10 * time.Minute, SteadyWCU: 50, RCU: 4000},
			{Items: 1_000_000, Duration: 2 * time.Minute, SteadyWCU: 10},
		} {
			p, err := PlanBulkLoad(b)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Diluted || p.Slower == nil {
				t.Fatalf("%+v: diluted %v, slower %v; want a slower alternative", b, p.Diluted, p.Slower)
			}
			if s := p.Slower; s.Diluted || s.Load.Len() > p.Fresh.Len() {
				t.Errorf("%+v: slower load has %d partitions (fresh %d), diluted %v", b, s.Load.Len(), p.Fresh.Len(), s.Diluted)
			}
		}
	})
}

func TestPlanBulkLoadRefuses(t *testing.T) {
	for _, b := range []BulkLoad{
		{},
		{Items: -1, Duration: time.Hour},
		{Items: 1, Duration: 0},
		{Items: 1, Duration: time.Millisecond},
		{Items: 1, Duration: time.Hour, ItemBytes: -1},
		{Items: 1, Duration: time.Hour, ItemBytes: 500 * 1024},
		{Items: 1, Duration: time.Hour, SteadyWCU: -1},
		{Items: 1, Duration: time.Hour, RCU: math.NaN()},
		{Items: math.MaxInt64, Duration: time.Hour, ItemBytes: 400 * 1024},
		{Items: 1e12, Duration: time.Second},
	} {
		if _, err := PlanBulkLoad(b); !errors.Is(err, ErrWorkload) {
			t.Errorf("%+v: err %v, want ErrWorkload", b, err)
		}
	}
}

func TestRecommendFor(t *testing.T) {
	// On a table whose partitions have the full 1,000 WCU, the plan is
	// Recommend's.
	full, err := NewLayout(0, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []Workload{
		{WritesPerSecond: 1500},
		{WritesPerSecond: 5000, ItemBytes: 1500, ReadsPerSecond: 2, ReadBytes: 8 << 20, Consistent: true},
		{WritesPerSecond: 90, Utilization: 0.9},
	} {
		want, err := Recommend(w)
		if err != nil {
			t.Fatal(err)
		}
		got, err := RecommendFor(w, full)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Recommendation{}, "Explanation"), approx); diff != "" {
			t.Errorf("%+v (-Recommend +RecommendFor):\n%s", w, diff)
		}
	}

	// The guide's 5,000 RCU / 2,000 WCU table: four partitions of 500 WCU.
	// A key of 1,500 writes/s is planned at half of 500 WCU per key, not
	// half of 1,000.
	four, err := NewLayout(5000, 2000, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := Workload{WritesPerSecond: 1500}
	r, err := RecommendFor(w, four)
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 6 || r.WCUPerKey != 250 {
		t.Errorf("N = %d at %v WCU per key, want 6 at 250", r.N, r.WCUPerKey)
	}
	// After a split the smallest share (250 WCU) is the budget.
	split, err := four.Split(1)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := RecommendFor(w, split); err != nil || r.N != 12 {
		t.Errorf("after a split: N = %d, %v; want 12", r.N, err)
	}

	for _, l := range []Layout{{}, {Partitions: []Partition{{RCU: 10}}}} {
		if _, err := RecommendFor(w, l); !errors.Is(err, ErrWorkload) {
			t.Errorf("%+v: err %v, want ErrWorkload", l, err)
		}
	}
	tiny := Layout{Partitions: []Partition{{WCU: 0.001}}}
	if _, err := RecommendFor(Workload{WritesPerSecond: 1000}, tiny); !errors.Is(err, ErrWorkload) {
		t.Errorf("more than MaxN shards: err %v, want ErrWorkload", err)
	}
	if _, err := RecommendFor(Workload{WritesPerSecond: -1}, four); !errors.Is(err, ErrWorkload) {
		t.Errorf("negative writes: err %v, want ErrWorkload", err)
	}
}
