package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/partition"
	"github.com/dynashard/dynashard/shard"
)

// partResult is one measured step of scenario 7.
type partResult struct {
	n       int
	sharded bool
	keys    []int   // the step's physical keys on each partition
	reached int     // partitions holding at least one of them
	rate    float64 // items/s the model admitted (1 WCU each)
	limit   float64 // the table's WCU per real second
	bound   float64 // what the reached partitions admit per real second
	even    float64 // the fastest even stream of writes no partition throttles
	// perPart and throttled are, per partition in layout order, the
	// items/s admitted and the attempts/s refused (Stats.Tables).
	perPart, throttled []float64
	failed             int64
	cpu                cpuUse
}

func (r partResult) ratio() float64 { return r.rate / r.limit }

// partModel is scenario 7's table as the partition model lays it out, and
// its figures per real second.
type partModel struct {
	layout partition.Layout
	scale  float64 // simulated seconds per real second
	limit  float64 // the table's WCU per real second
}

func (b *bencher) partModel() (partModel, error) {
	l, err := partition.NewLayout(0, b.cfg.partWCU, 0)
	if err != nil {
		return partModel{}, fmt.Errorf("-part-wcu: %w", err)
	}
	return partModel{layout: l, scale: b.cfg.partScale, limit: b.cfg.partWCU * b.cfg.partScale}, nil
}

// share is one partition's WCU per real second.
func (m partModel) share(i int) float64 { return m.layout.Partitions[i].WCU * m.scale }

// place returns how many of the physical keys of base (one key unsharded,
// base.1 … base.N sharded) fall on each partition, by the proxy's own
// placement: partition.KeyHash and Layout.Find.
func (m partModel) place(base string, n int, sharded bool) ([]int, error) {
	keys := []string{base}
	if sharded {
		keys = slices.Collect(shard.Keys(base, n))
	}
	counts := make([]int, m.layout.Len())
	for _, k := range keys {
		h, err := partition.KeyHash(&types.AttributeValueMemberS{Value: k})
		if err != nil {
			return nil, err
		}
		counts[m.layout.Find(h)]++
	}
	return counts, nil
}

// bounds returns, for keys per partition, what the partitions holding a
// key admit per real second when each is saturated, and the fastest stream
// of writes spread evenly over the keys (as Hash(N) spreads ids) that no
// partition throttles: a partition holding k of the N keys takes k/N of
// the stream.
func (m partModel) bounds(keys []int) (reached int, bound, even float64) {
	total := 0
	for _, k := range keys {
		total += k
	}
	even = math.Inf(1)
	for i, k := range keys {
		if k > 0 {
			reached++
			bound += m.share(i)
			even = min(even, m.share(i)*float64(total)/float64(k))
		}
	}
	return reached, bound, even
}

// partitionWrites is scenario 7: scenario 1's hot day on a provisioned
// table of the partition model, where keys share their partition's
// throughput: the limit is the table's WCU, and sharding pays only once the
// physical keys reach every partition.
func (b *bencher) partitionWrites(ctx context.Context) (*section, error) {
	m, err := b.partModel()
	if err != nil {
		return nil, err
	}
	endpoint, _, table, drop, err := b.dayTable(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()

	sec := &section{title: "Hot-day writes on a provisioned table (partition model)"}
	sec.intro = append(sec.intro, b.partIntro(m)...)
	t := sec.table(append([]string{"keys", "N", "keys per partition", "items/s", "limit: table WCU", "ratio", "bound: partitions reached",
		"bound: even stream", "items/s per partition", "throttled/s per partition", "failed calls"}, splitHeader...)...)
	// Added after the loop: sec.table's pointer t would not survive a
	// second table appended now.
	perWrite := mdTable{header: perWriteHeader}
	var results []partResult
	for i, n := range append([]int{1}, b.cfg.partNs...) {
		r, err := b.partStep(ctx, m, endpoint, table, i, n, i > 0)
		if err != nil {
			return sec, err
		}
		results = append(results, r)
		t.row(append([]string{keysLabel(r.sharded), fmt.Sprint(r.n), perPartition(ints(r.keys)),
			fig(r.rate), fig(r.limit), pct(r.ratio()), fig(r.bound), fig(r.even), perPartition(r.perPart), perPartition(r.throttled),
			fmt.Sprint(r.failed)}, r.cpu.splitCells()...)...)
		perWrite.row(append([]string{keysLabel(r.sharded), fmt.Sprint(r.n)}, r.cpu.perOp(r.rate)...)...)
	}
	sec.tables = append(sec.tables, perWrite)
	sec.notes = append(sec.notes, partVerdict(results, m.layout.Len()), perWriteNote)
	alt := fmt.Sprintf("write throughput vs N on a %d-partition table against the table's WCU", m.layout.Len())
	sec.plot = &plotSpec{file: "writes_partitions", alt: alt,
		draw: func() (*plot.Plot, error) { return partPlot(results, m.limit) }}
	return sec, nil
}

func keysLabel(sharded bool) string {
	if sharded {
		return "sharded"
	}
	return "unsharded"
}

func ints(v []int) []float64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return f
}

// perPartition prints one figure per partition: "100 / 98 / 0 / 100".
func perPartition(v []float64) string {
	s := make([]string, len(v))
	for i, f := range v {
		s[i] = fmt.Sprintf("%.0f", f)
	}
	return strings.Join(s, " / ")
}

// partIntro states the model and its parameters.
func (b *bencher) partIntro(m partModel) []string {
	c := b.cfg
	n := m.layout.Len()
	return []string{
		fmt.Sprintf("Scenario 1's hot day on a provisioned table of the partition model (dynashardtest/faultproxy with Model = Partitioned), "+
			"where keys share their partition's throughput as on DynamoDB: %s WCU and 0 RCU, which package partition lays out, "+
			"as the guide does, as %d partitions of %s WCU; a partition-key value falls on the partition whose key-hash range "+
			"holds its partition.KeyHash. The model runs at time scale %g (its clock runs at %g× real time), so a partition "+
			"admits %s WCU per real second and the table %s: the limit line. Burst window %s of simulated time (DynamoDB keeps "+
			"up to 300 s, best effort; short here so that each step measures the steady state); adaptive capacity as modelled "+
			"by default (it lends only after a partition has been throttled for 5 simulated minutes, longer than any step, and "+
			"no partition may pass 1,000 WCU, which a 1,000 WCU share already is).",
			fig(c.partWCU), n, fig(m.layout.Partitions[0].WCU), c.partScale, c.partScale, fig(m.share(0)), fig(m.limit),
			c.partBurst),
		fmt.Sprintf("*unsharded*: every write on one partition-key value, so on one partition. *sharded*: shard.Table.Put "+
			"with shard.Hash(N) (Layout.Unchecked: a table without read capacity cannot read the layout record, whose cost "+
			"scenario 1 includes). Items are about 230 bytes (1 WCU). Every step has a fresh proxy (full buckets), a fresh "+
			"day and %d writers; it runs %s unmeasured, then %s measured. *keys per partition*: how the step's physical keys "+
			"fall on the partitions (partition.KeyHash and Layout.Find, the proxy's own placement). *bound: partitions "+
			"reached*: what the partitions holding a key admit when each is saturated, as here, where writers that meet "+
			"throttling shed the fuller partitions' excess. *bound: even stream*: the fastest stream of writes spread evenly "+
			"over the keys, as shard.Hash(N) spreads ids, that no partition throttles (a partition holding k of the N keys "+
			"takes k/N of it): what an application writing at a steady rate gets. Per-partition figures are the "+
			"proxy's Stats.Tables over the measured window, in layout order; throttled attempts include the SDK's "+
			"retries (%d attempts per call); failed calls are Puts still throttled after them.",
			c.partWriters, c.warmup, c.duration, c.attempts),
	}
}

// partStep runs one step of scenario 7 through a fresh proxy.
func (b *bencher) partStep(ctx context.Context, m partModel, endpoint, table string, step, n int, sharded bool) (partResult, error) {
	c := b.cfg
	p, err := newProxy(endpoint, faultproxy.Config{Model: faultproxy.Partitioned, Seed: 1,
		Partition: faultproxy.PartitionConfig{
			Tables:      map[faultproxy.TableKey]faultproxy.Throughput{{Table: table}: {WCU: c.partWCU}},
			BurstWindow: c.partBurst, TimeScale: c.partScale,
		}})
	if err != nil {
		return partResult{}, err
	}
	defer p.Close()
	base := fmt.Sprintf("pday%d", step)
	r := partResult{n: n, sharded: sharded, limit: m.limit}
	if r.keys, err = m.place(base, n, sharded); err != nil {
		return r, err
	}
	r.reached, r.bound, r.even = m.bounds(r.keys)
	l := shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(n), Unchecked: true}
	put, err := dayPut(b.client(p.URL(), c.partWriters), l, base, sharded)
	if err != nil {
		return r, err
	}
	w := b.startWriters(ctx, stepLabel(n, sharded), c.partWriters, put)
	if sleepCtx(w.ctx, c.warmup) {
		f0 := w.failed.Load()
		p.ResetStats()
		b.cpu.begin()
		s0 := sampleCPU()
		ok := sleepCtx(w.ctx, c.duration)
		f1, st, s1 := w.failed.Load(), p.Stats(), sampleCPU()
		split := b.cpu.end(s1.self - s0.self)
		if ok {
			secs := s1.at.Sub(s0.at).Seconds()
			r.rate, r.failed, r.cpu = st.Total.WCU/secs, f1-f0, splitBetween(s0, s1, split)
			for _, ps := range st.Tables[faultproxy.TableKey{Table: table}].Partitions {
				r.perPart = append(r.perPart, ps.Write.Units/secs)
				r.throttled = append(r.throttled, float64(ps.Write.Throttled)/secs)
			}
		}
	}
	if err := w.stop(); err != nil {
		return r, err
	}
	return r, ctx.Err()
}

// partVerdict compares the unsharded day with the sharded steps and says
// whether the target (90 % of the table's WCU) was met once the keys
// reached every partition, and why not where it was not.
func partVerdict(rs []partResult, partitions int) string {
	var b strings.Builder
	if len(rs) > 0 && !rs[0].sharded {
		fmt.Fprintf(&b, "Unsharded, the day tops out at %s items/s, %s of the table's %s: one partition's share, however "+
			"idle the other %d are. ", fig(rs[0].rate), pct(rs[0].ratio()), fig(rs[0].limit), partitions-1)
	}
	var met, missed []string
	for _, r := range rs {
		if !r.sharded || r.reached < partitions {
			continue
		}
		if r.ratio() >= 0.9 {
			met = append(met, fmt.Sprint(r.n))
			continue
		}
		why := fmt.Sprintf("N = %d (%s; keys %s", r.n, pct(r.ratio()), perPartition(ints(r.keys)))
		if r.even < 0.9*r.limit {
			why += fmt.Sprintf(", so an even stream is capped at %s", fig(r.even))
		}
		missed = append(missed, why+cpuNote(r.cpu)+")")
	}
	var partial []string
	for _, r := range rs {
		if r.sharded && r.reached < partitions {
			partial = append(partial, fmt.Sprintf("N = %d reached %d", r.n, r.reached))
		}
	}
	if len(partial) > 0 {
		fmt.Fprintf(&b, "Sharded keys that miss partitions leave their share unused: %s of the %d partitions. ",
			strings.Join(partial, ", "), partitions)
	}
	if len(met) > 0 {
		fmt.Fprintf(&b, "With every partition reached, the target (≥ 90 %% of the table's WCU) was met at N = %s. ", strings.Join(met, ", "))
	}
	if len(missed) > 0 {
		fmt.Fprintf(&b, "It was missed at %s. ", strings.Join(missed, ", "))
	}
	if over := overShare(rs, partitions); len(over) > 0 {
		fmt.Fprintf(&b, "A partition above its share (%s) spent burst credit: while it was under its share it saved "+
			"up to a burst window of it, and the measured window began with some of that unspent. ", strings.Join(over, ", "))
	}
	return strings.TrimSpace(b.String())
}

// overShare lists the steps with a partition more than 2 % above its
// share of the limit: "N = 8, partition 0: 115 items/s".
func overShare(rs []partResult, partitions int) []string {
	var out []string
	for _, r := range rs {
		share := r.limit / float64(partitions)
		for i, v := range r.perPart {
			if v > 1.02*share {
				label := keysLabel(r.sharded)
				if r.sharded {
					label = fmt.Sprintf("N = %d", r.n)
				}
				out = append(out, fmt.Sprintf("%s, partition %d: %s items/s", label, i, fig(v)))
			}
		}
	}
	return out
}

// cpuNote says whether the machine's CPU was saturated during a step.
func cpuNote(u cpuUse) string {
	switch {
	case u.saturated():
		return fmt.Sprintf("; machine CPU %s busy: this machine, not the model, was the limit", pct(u.machine))
	case u.machineKnown:
		return fmt.Sprintf("; machine CPU %s busy", pct(u.machine))
	}
	return ""
}

// partLimitLine is the limit line of scenario 7's plot: the table's WCU per
// real second, flat over the shard counts.
func partLimitLine(lo, hi, limit float64) plotter.XYs {
	return plotter.XYs{{X: lo, Y: limit}, {X: hi, Y: limit}}
}

func partPlot(rs []partResult, limit float64) (*plot.Plot, error) {
	var ns []int
	for _, r := range rs {
		if r.sharded || len(ns) == 0 {
			ns = append(ns, r.n)
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, n := range ns {
		lo, hi = min(lo, float64(n)), max(hi, float64(n))
	}
	if lo == hi {
		lo, hi = lo/2, hi*2
	}
	p := newPlot("Hot-day writes on a provisioned table: throughput vs shard count", "shards N (log scale)",
		"items/s (1 WCU each)", ns)
	var sharded, bound, even, flat plotter.XYs
	for _, r := range rs {
		if r.sharded {
			sharded = append(sharded, plotter.XY{X: float64(r.n), Y: r.rate})
			bound = append(bound, plotter.XY{X: float64(r.n), Y: r.bound})
			even = append(even, plotter.XY{X: float64(r.n), Y: r.even})
		}
	}
	if len(rs) > 0 && !rs[0].sharded {
		flat = plotter.XYs{{X: lo, Y: rs[0].rate}, {X: hi, Y: rs[0].rate}}
	}
	target := partLimitLine(lo, hi, 0.9*limit)
	series := []struct {
		name   string
		pts    plotter.XYs
		color  int
		dashed bool
	}{
		{fmt.Sprintf("limit: the table's WCU (%s/s)", fig(limit)), partLimitLine(lo, hi, limit), 0, true},
		{"90 % of the limit (target)", target, 3, true},
		{"bound: the partitions the keys reach", bound, 4, true},
		{"bound: an even stream no partition throttles", even, 5, true},
		{"sharded: shard.Table.Put, Hash(N)", sharded, 1, false},
		{"unsharded baseline: one key", flat, 2, true},
	}
	for _, s := range series {
		if len(s.pts) == 0 {
			continue
		}
		if err := addSeries(p, s.name, s.pts, s.color, s.dashed); err != nil {
			return nil, err
		}
	}
	// Room above the limit line for the legend (newPlot puts it top left).
	p.Y.Min, p.Y.Max = 0, 1.6*limit
	for _, r := range rs {
		p.Y.Max = max(p.Y.Max, 1.05*r.rate)
	}
	return p, nil
}
