package partition

import (
	"fmt"
	"math"
	"time"
)

// RecommendFor is [Recommend] for a logical key of the provisioned table
// laid out as l: each physical key is planned at Utilization × the
// smallest WCU share among l's partitions, not at Utilization × 1,000 WCU.
// A provisioned partition serves its share of the table's throughput, and
// a physical key may hash onto any partition, so the smallest share is the
// budget (adaptive capacity may lend more, best effort; the plan does not
// count on it). A table whose partitions have no write capacity is an error
// wrapping ErrWorkload, as are the workloads Recommend refuses.
//
// It does not check that the logical key fits the table: a key writing
// more than the table's WCU is throttled whatever N is (compare
// Recommendation.WCUPerKey × N with [Layout.Total]).
func RecommendFor(w Workload, l Layout) (Recommendation, error) {
	util, item, err := w.checked()
	if err != nil {
		return Recommendation{}, err
	}
	share := l.MinWCU()
	if !(share > 0) {
		return Recommendation{}, fmt.Errorf("%w: the table's smallest partition has %g WCU", ErrWorkload, share)
	}
	wcu := w.WritesPerSecond * float64((item+1023)/1024)
	if need := wcu / (util * share); need > maxN {
		return Recommendation{}, fmt.Errorf("%w: %.0f WCU/s at %g of a %g WCU partition share needs more than shard.MaxN = %d shards",
			ErrWorkload, wcu, util, share, maxN)
	}
	// Recommend plans against 1,000 WCU per key: the same arithmetic at a
	// utilization scaled to the share plans against the share.
	scaled := w
	scaled.Utilization = util * share / PartitionWCU
	r, err := Recommend(scaled)
	if err != nil {
		return Recommendation{}, err
	}
	r.explainFor(wcu, util, share)
	return r, nil
}

// MinWCU returns the smallest WCU share among l's partitions, or 0 for a
// Layout without partitions.
func (l Layout) MinWCU() float64 {
	if len(l.Partitions) == 0 {
		return 0
	}
	m := l.Partitions[0].WCU
	for _, p := range l.Partitions[1:] {
		m = min(m, p.WCU)
	}
	return m
}

// explainFor writes r's Explanation for a peak of wcu WCU/s planned at util
// of a partition share of share WCU.
func (r *Recommendation) explainFor(wcu, util, share float64) {
	budget := fmt.Sprintf("%.0f%% of %s WCU, the smallest partition share of this table (not DynamoDB's 1,000 WCU per-partition maximum)",
		100*util, trimFloat(share))
	if r.N == 1 {
		r.Explanation = fmt.Sprintf("%.0f WCU/s fits in one key within %s: no sharding needed.", wcu, budget)
	} else {
		r.Explanation = fmt.Sprintf("%.0f WCU/s over %d keys is %.0f WCU/s each, within %s; every whole-key read becomes %d Queries costing at least %.1f RCU.",
			wcu, r.N, r.WCUPerKey, budget, r.N, r.RCUPerRead)
	}
	if !r.WithinReadLimit {
		r.Explanation += fmt.Sprintf(" Reads need %.0f RCU/s per key, over the 3,000 RCU partition limit: cache or shard reads differently.", r.ReadRCUPerKey)
	}
}

// trimFloat prints f with at most two decimals and no trailing zeros.
func trimFloat(f float64) string {
	return fmt.Sprint(math.Round(f*100) / 100)
}

// BulkLoad describes a bulk load into a new provisioned table, the input
// to [PlanBulkLoad]. The zero value loads nothing.
type BulkLoad struct {
	Items     int64         // items to load
	ItemBytes int           // typical item size; zero means 1 KB (1 WCU per item)
	Duration  time.Duration // how long the load may take
	// RCU is the table's read capacity, during the load and after it.
	RCU float64
	// SteadyWCU is the table's write capacity after the load, when it is
	// lowered to what the application needs. Zero means not given: the
	// plan has no steady state and no slower alternative.
	SteadyWCU float64
}

// BulkLoadPlan is [PlanBulkLoad]'s answer: the table during the load and
// after throughput is lowered, and, when the load leaves the table with
// more partitions than it needs, the slower load that does not.
type BulkLoadPlan struct {
	Duration   time.Duration // the time the load was planned for
	WCUPerItem int           // write units one item costs: one per started KB
	TotalWCU   float64       // Items × WCUPerItem, the write units of the whole load
	Bytes      int64         // Items × ItemBytes, the data loaded
	// Rate is the WCU per second that writes TotalWCU in Duration.
	Rate float64
	// WCU is the write capacity to provision: Rate rounded to two
	// significant figures (11,111 → 11,000; 1,852 → 1,900), as the guide
	// does, or Rate rounded down to a whole unit when that rounding would
	// need more partitions than Rate does (then Floor is set). It is at
	// least 1.
	WCU   float64
	Floor bool
	// LoadTime is how long the load takes at WCU (not Duration when WCU is
	// below Rate).
	LoadTime time.Duration
	// Load is the table during the load: NewLayout(RCU, WCU, Bytes).
	Load Layout
	// Steady is the table after its throughput is lowered to SteadyWCU:
	// the same partitions, each with less (partitions never merge). Fresh
	// is a table created at RCU and SteadyWCU holding the same data, the
	// partitions the steady state needs. Both are empty without SteadyWCU.
	Steady, Fresh Layout
	// Diluted reports that Steady has more partitions than Fresh, so each
	// serves less than it would have: the guide's warning.
	Diluted bool
	// MinDuration is the shortest load whose WCU needs no more partitions
	// than Fresh has; Slower is the load planned at MinDuration rounded up
	// to a whole hour (a whole minute under an hour). Both are set only
	// when Diluted.
	MinDuration time.Duration
	Slower      *BulkLoadPlan
}

// PlanBulkLoad plans a bulk load the way the DynamoDB guide's example does
// (20,000,000 items of 1 KB in 30 minutes need 11,000 WCU and 11
// partitions; lowered to 200 WCU afterwards, each of the 11 keeps about 18;
// over 3 hours, 1,900 WCU and 2 partitions would do). Negative, non-finite
// or out-of-range figures, a load of no items or no time, and an item over
// DynamoDB's item limit are an error wrapping ErrWorkload.
func PlanBulkLoad(b BulkLoad) (BulkLoadPlan, error) {
	if err := b.check(); err != nil {
		return BulkLoadPlan{}, err
	}
	p, err := planLoad(b)
	if err != nil || b.SteadyWCU == 0 {
		return p, err
	}
	if p.Steady, err = p.Load.Provision(b.RCU, b.SteadyWCU); err != nil {
		return BulkLoadPlan{}, err
	}
	if p.Fresh, err = NewLayout(b.RCU, b.SteadyWCU, p.Bytes); err != nil {
		return BulkLoadPlan{}, err
	}
	p.Diluted = p.Steady.Len() > p.Fresh.Len()
	if !p.Diluted {
		return p, nil
	}
	// The most WCU that needs no more than Fresh's partitions, with the
	// table's RCU: RCU/3000 + W/1000 <= n.
	most := (float64(p.Fresh.Len()) - b.RCU/PartitionRCU) * PartitionWCU
	p.MinDuration = time.Duration(math.Ceil(p.TotalWCU/most)) * time.Second
	slow := b
	slow.Duration = roundUp(p.MinDuration)
	s, err := planLoad(slow)
	if err != nil {
		return BulkLoadPlan{}, err
	}
	if s.Steady, err = s.Load.Provision(b.RCU, b.SteadyWCU); err != nil {
		return BulkLoadPlan{}, err
	}
	s.Fresh = p.Fresh
	s.Diluted = s.Steady.Len() > s.Fresh.Len()
	p.Slower = &s
	return p, nil
}

func (b BulkLoad) check() error {
	switch {
	case b.Items <= 0:
		return fmt.Errorf("%w: bulk load of %d items", ErrWorkload, b.Items)
	case b.Duration < time.Second:
		return fmt.Errorf("%w: bulk load in %v: want at least a second", ErrWorkload, b.Duration)
	}
	if _, _, err := (Workload{ItemBytes: b.ItemBytes}).checked(); err != nil {
		return err
	}
	_, err := ThroughputPartitions(b.RCU, b.SteadyWCU)
	return err
}

// planLoad fills in the load itself: units, rate, provisioned WCU, layout.
func planLoad(b BulkLoad) (BulkLoadPlan, error) {
	item := b.ItemBytes
	if item == 0 {
		item = 1024
	}
	p := BulkLoadPlan{Duration: b.Duration, WCUPerItem: (item + 1023) / 1024}
	p.TotalWCU = float64(b.Items) * float64(p.WCUPerItem)
	if float64(b.Items)*float64(item) > math.MaxInt64/2 {
		return BulkLoadPlan{}, fmt.Errorf("%w: %d items of %d bytes", ErrWorkload, b.Items, item)
	}
	p.Bytes = b.Items * int64(item)
	p.Rate = p.TotalWCU / b.Duration.Seconds()
	need, err := ThroughputPartitions(b.RCU, p.Rate)
	if err != nil {
		return BulkLoadPlan{}, err
	}
	p.WCU = round2(p.Rate)
	if n, err := ThroughputPartitions(b.RCU, p.WCU); err != nil || n > need {
		p.WCU, p.Floor = max(1, math.Floor(p.Rate)), true
	}
	p.LoadTime = time.Duration(math.Ceil(p.TotalWCU/p.WCU)) * time.Second
	if p.Load, err = NewLayout(b.RCU, p.WCU, p.Bytes); err != nil {
		return BulkLoadPlan{}, err
	}
	return p, nil
}

// round2 rounds x > 0 to two significant figures, and to a whole unit of
// at least 1.
func round2(x float64) float64 {
	unit := max(1, math.Pow(10, math.Floor(math.Log10(x))-1))
	return max(1, math.Round(x/unit)*unit)
}

// roundUp rounds d up to a whole hour, or under an hour to a whole minute.
func roundUp(d time.Duration) time.Duration {
	if d >= time.Hour {
		return (d + time.Hour - 1).Truncate(time.Hour)
	}
	return (d + time.Minute - 1).Truncate(time.Minute)
}
