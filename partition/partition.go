package partition

import (
	"fmt"
	"math"

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/errs"
)

// The DynamoDB guide's per-partition limits, which partition planning and
// [Recommend] are built on.
const (
	PartitionRCU   = 3000     // read capacity units per second one partition serves
	PartitionWCU   = 1000     // write capacity units per second one partition serves
	PartitionBytes = 10 << 30 // about 10 GB of data per partition
)

// Partition is the provisioned throughput one partition of a table gets.
type Partition struct {
	RCU, WCU float64
}

// Layout models a provisioned table's partitions the way the DynamoDB guide
// explains them: throughput is divided evenly over partitions and is not
// shared; raising it beyond what the partitions support doubles their
// number; a partition that fills splits in two, each child with half the
// parent's throughput; partitions never merge. It is a planning model, not a
// promise about what DynamoDB does internally today (adaptive capacity and
// on-demand tables behave better, but neither is to be relied on).
//
// Each partition holds a range of the key-hash space (see the package doc):
// Ranges[i] is the range of Partitions[i]. The layouts this package returns
// always have one range per partition, and the ranges tile the space. A
// Layout built by hand without Ranges, or with a different number of them,
// is read as an even split of the space in partition order.
//
// The zero Layout has no partitions. Methods return a new Layout and never
// modify the receiver, so a Layout is safe for concurrent reads.
type Layout struct {
	Partitions []Partition
	Ranges     []Range
}

// maxN is shard.MaxN, the largest shard count Recommend may return,
// restated so that package partition imports nothing above internal/: the
// fault proxy, which package shard's tests use, imports it. A test keeps
// the two equal.
const maxN = 10_000

// MaxPartitions bounds the partitions the planning functions model: far
// above any real table (a table at the default quota of 40,000 RCU and
// 40,000 WCU has 54), low enough that a Layout stays small. Figures that
// need more are refused with ErrWorkload.
const MaxPartitions = 100_000

// ThroughputPartitions returns the partitions needed for rcu and wcu:
// ceil(rcu/3000 + wcu/1000), at least 1. Negative, non-finite or
// out-of-range figures (more than MaxPartitions) are an error wrapping
// ErrWorkload.
func ThroughputPartitions(rcu, wcu float64) (int, error) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"rcu", rcu}, {"wcu", wcu}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return 0, fmt.Errorf("%w: %s %v is negative or not finite", ErrWorkload, f.name, f.v)
		}
	}
	need := rcu/PartitionRCU + wcu/PartitionWCU
	if need > MaxPartitions {
		return 0, fmt.Errorf("%w: %g RCU and %g WCU need more than MaxPartitions (%d) partitions", ErrWorkload, rcu, wcu, MaxPartitions)
	}
	return max(1, ceilInt(need)), nil
}

// SizePartitions returns the partitions needed to hold bytes of data:
// ceil(bytes / 10 GB), at least 1. Negative sizes and sizes needing more
// than MaxPartitions are an error wrapping ErrWorkload.
func SizePartitions(bytes int64) (int, error) {
	switch {
	case bytes < 0:
		return 0, fmt.Errorf("%w: size %d is negative", ErrWorkload, bytes)
	case bytes == 0:
		return 1, nil
	}
	n := (bytes-1)/PartitionBytes + 1
	if n > MaxPartitions {
		return 0, fmt.Errorf("%w: %d bytes need more than MaxPartitions (%d) partitions", ErrWorkload, bytes, MaxPartitions)
	}
	return int(n), nil
}

// ceilInt rounds up, forgiving floating-point noise such as 2.0000000000000004
// from 1000/3000 + 1000/1000 + ... so that exact multiples do not gain a
// partition. x must be within int's range.
func ceilInt(x float64) int {
	r := math.Round(x)
	if math.Abs(x-r) < 1e-9 {
		return int(r)
	}
	return int(math.Ceil(x))
}

// NewLayout returns the initial layout of a table created with rcu, wcu and
// bytes of data: max(ThroughputPartitions, SizePartitions) partitions, the
// throughput divided evenly among them. Figures those functions refuse are
// an error wrapping ErrWorkload.
func NewLayout(rcu, wcu float64, bytes int64) (Layout, error) {
	tp, err := ThroughputPartitions(rcu, wcu)
	if err != nil {
		return Layout{}, err
	}
	sp, err := SizePartitions(bytes)
	if err != nil {
		return Layout{}, err
	}
	return even(max(tp, sp), rcu, wcu), nil
}

// even returns n partitions sharing rcu and wcu evenly, over an even split
// of the key-hash space.
func even(n int, rcu, wcu float64) Layout {
	return Layout{Partitions: shares(n, rcu, wcu), Ranges: evenRanges(n)}
}

func shares(n int, rcu, wcu float64) []Partition {
	p := make([]Partition, n)
	for i := range p {
		p[i] = Partition{RCU: rcu / float64(n), WCU: wcu / float64(n)}
	}
	return p
}

// Len returns the number of partitions.
func (l Layout) Len() int { return len(l.Partitions) }

// Total returns the table's provisioned throughput, the sum over partitions.
func (l Layout) Total() (rcu, wcu float64) {
	for _, p := range l.Partitions {
		rcu += p.RCU
		wcu += p.WCU
	}
	return rcu, wcu
}

// Provision returns the layout after the table's throughput is changed to
// rcu and wcu. If the new throughput needs more partitions than the table
// has, the partition count doubles (repeatedly, until it is enough), every
// doubling splitting each partition's range in two (partition i's halves
// become 2i and 2i+1); otherwise the partitions and their ranges stay, even
// when throughput is lowered, because partitions never merge. The
// throughput is then divided evenly. Figures that ThroughputPartitions
// refuses, or a doubling past MaxPartitions, are an error wrapping
// ErrWorkload.
func (l Layout) Provision(rcu, wcu float64) (Layout, error) {
	need, err := ThroughputPartitions(rcu, wcu)
	if err != nil {
		return Layout{}, err
	}
	ranges := l.ranges()
	for len(ranges) < need {
		if 2*len(ranges) > MaxPartitions {
			return Layout{}, fmt.Errorf("%w: doubling %d partitions for %g RCU and %g WCU passes MaxPartitions (%d)", ErrWorkload, len(l.Partitions), rcu, wcu, MaxPartitions)
		}
		if ranges, err = halveAll(ranges); err != nil {
			return Layout{}, err
		}
	}
	return Layout{Partitions: shares(len(ranges), rcu, wcu), Ranges: ranges}, nil
}

// ErrNoPartition is returned by [Layout.Split] for an index outside the
// layout. It is bad input: it matches dynashard.ErrInvalid.
var ErrNoPartition = errs.New("partition: no such partition", errs.Invalid)

// Split returns the layout after partition i fills and splits: it is
// replaced by two partitions, each with half its throughput and half its
// range, the lower half placed at i and the upper half at the end. The
// table's total throughput is unchanged. A split past MaxPartitions, or of
// a range holding a single hash, is an error wrapping ErrWorkload.
func (l Layout) Split(i int) (Layout, error) {
	if i < 0 || i >= len(l.Partitions) {
		return Layout{}, fmt.Errorf("%w: %d of %d", ErrNoPartition, i, len(l.Partitions))
	}
	if len(l.Partitions) >= MaxPartitions {
		return Layout{}, fmt.Errorf("%w: splitting partition %d passes MaxPartitions (%d)", ErrWorkload, i, MaxPartitions)
	}
	r := append([]Range(nil), l.ranges()...)
	lo, hi, ok := r[i].halves()
	if !ok {
		return Layout{}, fmt.Errorf("%w: partition %d holds the single hash %d", ErrWorkload, i, r[i].Start)
	}
	r[i] = lo
	p := append([]Partition(nil), l.Partitions...)
	half := Partition{RCU: p[i].RCU / 2, WCU: p[i].WCU / 2}
	p[i] = half
	return Layout{Partitions: append(p, half), Ranges: append(r, hi)}, nil
}

// Workload describes the traffic on one logical (hot) partition key, the
// input to [Recommend]. The zero value is no traffic.
type Workload struct {
	// WritesPerSecond is the peak rate of writes to the logical key.
	WritesPerSecond float64
	// ItemBytes is the typical item size; each write costs ceil(ItemBytes /
	// 1 KB) WCU. Zero means 1 KB (1 WCU per write).
	ItemBytes int
	// ReadsPerSecond is how often the whole logical key is read (each read
	// is a scatter: one Query per suffix). Reads of single items by id with
	// a calculated strategy cost one GetItem and are not counted here.
	ReadsPerSecond float64
	// ReadBytes is the data one whole-key read returns. Zero means the
	// minimum: every Query is charged at least one 4 KB read unit.
	ReadBytes int64
	// Consistent reports whether reads are strongly consistent (1 RCU per
	// 4 KB) rather than eventually consistent (half).
	Consistent bool
	// Utilization is the fraction of a partition's 1,000 WCU a physical
	// key may be planned to use. Zero means 0.5: hashing is never perfectly
	// even (max/mean ≈ 1.05 at best) and bursts and neighbouring keys share
	// the partition, so planning at the limit throttles.
	Utilization float64
}

// Recommendation is [Recommend]'s answer.
type Recommendation struct {
	N               int     // shard count: suffixes 1..N
	WCUPerWrite     int     // write units one write costs
	WCUPerKey       float64 // peak WCU/s on each physical key with an even spread
	QueriesPerRead  int     // Queries one whole-key read issues (= N)
	RCUPerRead      float64 // minimum read units one whole-key read consumes
	QueriesPerSec   float64 // Queries/s the read rate implies
	RCUPerSec       float64 // minimum RCU/s the read rate implies
	ReadRCUPerKey   float64 // RCU/s each physical key serves for reads
	Explanation     string  // the reasoning, in one or two plain sentences
	WithinReadLimit bool    // ReadRCUPerKey stays under 3,000 RCU per partition
}

// ErrWorkload is returned (wrapped) by [Recommend] for a workload it cannot
// plan: negative or non-finite figures, or one needing more than shard.MaxN
// shards. It is bad input: it matches dynashard.ErrInvalid.
var ErrWorkload = errs.New("partition: cannot plan workload", errs.Invalid)

// Recommend returns the smallest shard count N that keeps each physical key
// of one logical key under Utilization × 1,000 WCU at the peak write rate,
// and the read fan-out cost that N implies: every read of the whole logical
// key becomes N Queries, each charged at least one read unit (half when
// eventually consistent). Sharding trades write headroom for read cost, so
// the smallest sufficient N is the recommendation.
func Recommend(w Workload) (Recommendation, error) {
	util, item, err := w.checked()
	if err != nil {
		return Recommendation{}, err
	}
	r := Recommendation{WCUPerWrite: (item + 1023) / 1024}
	wcu := w.WritesPerSecond * float64(r.WCUPerWrite)
	// Compare before converting: a tiny utilization or a huge rate must
	// not overflow into a small N.
	need := wcu / (util * PartitionWCU)
	if need > maxN {
		return Recommendation{}, fmt.Errorf("%w: %.0f WCU/s at %g utilization needs more than shard.MaxN = %d shards", ErrWorkload, wcu, util, maxN)
	}
	r.N = max(1, ceilInt(need))
	r.WCUPerKey = wcu / float64(r.N)
	r.planReads(w)
	r.explain(wcu, util)
	return r, nil
}

// checked returns w's utilization and item size with their defaults
// applied, or an error wrapping ErrWorkload for figures Recommend refuses.
func (w Workload) checked() (util float64, item int, err error) {
	for _, f := range []float64{w.WritesPerSecond, w.ReadsPerSecond, float64(w.ItemBytes), float64(w.ReadBytes), w.Utilization} {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, 0, fmt.Errorf("%w: %+v: negative or non-finite figure", ErrWorkload, w)
		}
	}
	util, item = w.Utilization, w.ItemBytes
	if util == 0 {
		util = 0.5
	}
	if item == 0 {
		item = 1024
	}
	switch {
	case util > 1:
		return 0, 0, fmt.Errorf("%w: utilization %v > 1", ErrWorkload, util)
	case item > ddbsize.MaxItemSize:
		return 0, 0, fmt.Errorf("%w: item size %d over DynamoDB's %d-byte limit", ErrWorkload, item, ddbsize.MaxItemSize)
	}
	return util, item, nil
}

// planReads fills in the read fan-out cost of r.N shards. Each Query is
// charged per 4 KB of what it returns, rounded up, and at least one unit:
// with N shards a read returns ReadBytes/N per shard.
func (r *Recommendation) planReads(w Workload) {
	unit := 0.5
	if w.Consistent {
		unit = 1
	}
	n := r.N
	units := max(1, math.Ceil(float64(w.ReadBytes)/float64(n)/4096))
	r.QueriesPerRead = n
	r.RCUPerRead = float64(n) * units * unit
	r.QueriesPerSec = w.ReadsPerSecond * float64(n)
	r.RCUPerSec = w.ReadsPerSecond * r.RCUPerRead
	r.ReadRCUPerKey = w.ReadsPerSecond * units * unit
	r.WithinReadLimit = r.ReadRCUPerKey <= PartitionRCU
}

// explain writes r's Explanation for a peak of wcu WCU/s planned at util.
func (r *Recommendation) explain(wcu, util float64) {
	if r.N == 1 {
		r.Explanation = fmt.Sprintf("%.0f WCU/s fits in one key at %.0f%% of the 1,000 WCU partition limit: no sharding needed.", wcu, 100*util)
	} else {
		r.Explanation = fmt.Sprintf("%.0f WCU/s over %d keys is %.0f WCU/s each, within %.0f%% of the 1,000 WCU partition limit; every whole-key read becomes %d Queries costing at least %.1f RCU.",
			wcu, r.N, r.WCUPerKey, 100*util, r.N, r.RCUPerRead)
	}
	if !r.WithinReadLimit {
		r.Explanation += fmt.Sprintf(" Reads need %.0f RCU/s per key, over the 3,000 RCU partition limit: cache or shard reads differently.", r.ReadRCUPerKey)
	}
}
