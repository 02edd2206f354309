package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/partition"
	"github.com/dynashard/dynashard/shard"
)

// planUsage is the first lines of "dynashard plan -h".
const planUsage = `usage: dynashard plan [table] [bulk load] [hot key]
  table:     -rcu R -wcu W [-size S] [-new-rcu R2] [-new-wcu W2] [-split I ...]
  bulk load: -load-items N -load-time D [-item-bytes B] [-steady-wcu W] [-rcu R]
  hot key:   -writes X [-item-bytes B] [-reads Y] [-read-bytes S] [-consistent] [-utilization U]
Table flags print the table's partitions (after -new-rcu/-new-wcu, then each
-split in turn); bulk-load flags print the table during and after a bulk load;
hot-key flags print a shard count, planned against the table's smallest
partition share when table or bulk-load flags are given, else against
DynamoDB's 1,000 WCU per partition. Sizes need a unit: B, KB, MB, GB, TB or
KiB … TiB (all powers of 1024, as in DynamoDB's "10 GB per partition").
Figures must be finite, not negative and within what a table of 100,000
partitions (3,000 RCU, 1,000 WCU, 10 GB each) takes; -writes more than 0.`

// planFlags is what "dynashard plan" was given.
type planFlags struct {
	rcu, wcu, newRCU, newWCU float64
	size                     byteSize
	splits                   splitList

	loadItems int64
	loadTime  time.Duration
	steadyWCU float64

	writes     float64
	itemBytes  int
	reads      float64
	readBytes  byteSize
	consistent bool
	util       float64

	set map[string]bool // flags given on the command line
}

func (f *planFlags) any(names ...string) bool {
	for _, n := range names {
		if f.set[n] {
			return true
		}
	}
	return false
}

func (f *planFlags) table() bool {
	return f.any("wcu", "size", "new-rcu", "new-wcu", "split") || f.set["rcu"] && !f.bulk()
}
func (f *planFlags) bulk() bool { return f.any("load-items", "load-time", "steady-wcu") }
func (f *planFlags) hot() bool {
	return f.any("writes", "reads", "read-bytes", "utilization", "consistent") || f.set["item-bytes"] && !f.bulk()
}

// runPlan prints a plan whole or not at all: it is written to a buffer
// and copied to stdout only when every step of it succeeded, so that a
// -split or a hot key the table cannot take fails before any of it is
// printed.
func runPlan(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f, err := parsePlan(args, stdout, stderr)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := writePlan(&out, f); err != nil {
		return err
	}
	_, err = out.WriteTo(stdout)
	return err
}

// writePlan writes the plan f asks for to stdout.
func writePlan(stdout io.Writer, f *planFlags) error {
	var budget *partition.Layout // the table a hot key is planned against
	switch {
	case f.bulk():
		l, err := planBulk(stdout, f)
		if err != nil {
			return err
		}
		budget = &l
	case f.table():
		l, err := planTable(stdout, f)
		if err != nil {
			return err
		}
		budget = &l
	}
	if f.hot() {
		if budget != nil {
			fmt.Fprintln(stdout)
		}
		return planHot(stdout, f, budget)
	}
	return nil
}

// parsePlan parses and checks the flags; every error names its flag.
func parsePlan(args []string, stdout, stderr io.Writer) (*planFlags, error) {
	f := &planFlags{set: map[string]bool{}}
	fs := newFlags("plan", stderr)
	fs.Float64Var(&f.rcu, "rcu", 0, "table, bulk load: provisioned read capacity units")
	fs.Float64Var(&f.wcu, "wcu", 0, "table: provisioned write capacity units")
	fs.Var(&f.size, "size", "table: data size with a unit, e.g. 20GB")
	fs.Float64Var(&f.newRCU, "new-rcu", 0, "table: RCU after a later change (if not given: unchanged)")
	fs.Float64Var(&f.newWCU, "new-wcu", 0, "table: WCU after a later change (if not given: unchanged)")
	fs.Var(&f.splits, "split", "table: `index` (0-based) of a partition that fills and splits; repeat for more splits")
	fs.Int64Var(&f.loadItems, "load-items", 0, "bulk load: items to load")
	fs.DurationVar(&f.loadTime, "load-time", 0, "bulk load: time the load may take, e.g. 30m")
	fs.Float64Var(&f.steadyWCU, "steady-wcu", 0, "bulk load: WCU the table is lowered to after the load")
	fs.Float64Var(&f.writes, "writes", 0, "hot key: peak writes per second to one logical key")
	fs.IntVar(&f.itemBytes, "item-bytes", 0, "hot key, bulk load: typical item size in bytes (default 1024)")
	fs.Float64Var(&f.reads, "reads", 0, "hot key: whole-key reads per second (each a scatter over N suffixes)")
	fs.Var(&f.readBytes, "read-bytes", "hot key: data one whole-key read returns, with a unit, e.g. 1MB")
	fs.BoolVar(&f.consistent, "consistent", false, "hot key: strongly consistent reads")
	fs.Float64Var(&f.util, "utilization", 0, "hot key: planned fraction of a partition's WCU per physical key (default 0.5)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), planUsage)
		fs.PrintDefaults()
	}
	if err := parse(fs, args, stdout); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if !f.table() && !f.bulk() && !f.hot() {
		fs.Usage()
		return nil, fmt.Errorf("%w: give table flags (-rcu, -wcu, ...), bulk-load flags (-load-items, ...) and/or hot-key flags (-writes, ...)", errUsage)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return f, nil
}

// The largest figures plan accepts. Each is the most any table the
// partition model holds could take (MaxPartitions partitions of 3,000 RCU,
// 1,000 WCU and 10 GB, as partition.MaxPartitions bounds them), or, for a
// hot key, the most shard.MaxN keys of one partition each could: a value
// beyond it has no plan whatever the other flags say, so it is a usage
// error, while a combination of figures within them that has no plan
// (a rate needing more partitions or shards) is exit status 1.
const (
	maxRCU    = partition.PartitionRCU * partition.MaxPartitions
	maxWCU    = partition.PartitionWCU * partition.MaxPartitions
	maxBytes  = partition.PartitionBytes * partition.MaxPartitions
	maxWrites = partition.PartitionWCU * shard.MaxN
	// maxReads is whole-key reads per second at the cheapest read, one
	// eventually consistent Query of 0.5 RCU, that maxRCU serves.
	maxReads = 2 * maxRCU
)

// check reports the first flag given wrongly or in the wrong company; its
// message starts with the flag.
func (f *planFlags) check() error {
	for _, c := range []struct {
		name string
		v    float64
		max  float64
		unit string
	}{
		{"rcu", f.rcu, maxRCU, "RCU"}, {"new-rcu", f.newRCU, maxRCU, "RCU"},
		{"wcu", f.wcu, maxWCU, "WCU"}, {"new-wcu", f.newWCU, maxWCU, "WCU"}, {"steady-wcu", f.steadyWCU, maxWCU, "WCU"},
		{"writes", f.writes, maxWrites, "writes per second"}, {"reads", f.reads, maxReads, "reads per second"},
	} {
		if !(c.v >= 0 && c.v <= c.max) { // NaN fails both
			return fmt.Errorf("-%s %v: want a figure from 0 to %s %s", c.name, c.v, num(c.max), c.unit)
		}
	}
	for _, c := range []struct {
		name string
		v    byteSize
	}{{"size", f.size}, {"read-bytes", f.readBytes}} {
		if limit := byteSize(maxBytes); c.v > limit {
			return fmt.Errorf("-%s %s: want at most %s (%s partitions of 10 GB)", c.name, c.v.String(), limit.String(), num(partition.MaxPartitions))
		}
	}
	if f.itemBytes < 0 || f.itemBytes > ddbsize.MaxItemSize {
		return fmt.Errorf("-item-bytes %d: want a size from 1 to %s bytes, DynamoDB's item limit (0 means 1,024)", f.itemBytes, num(ddbsize.MaxItemSize))
	}
	if f.set["utilization"] && !(f.util > 0 && f.util <= 1) {
		return fmt.Errorf("-utilization %v: want a fraction of a partition's WCU above 0 and at most 1", f.util)
	}
	if f.hot() && !(f.writes > 0) {
		return errors.New("-writes: hot-key flags need the key's peak writes per second, more than 0")
	}
	if !f.bulk() {
		return nil
	}
	for _, name := range []string{"wcu", "size", "new-rcu", "new-wcu", "split"} {
		if f.set[name] {
			return fmt.Errorf("-%s: a bulk load sets the table's WCU and size itself (-steady-wcu is its WCU after the load)", name)
		}
	}
	item := f.itemBytes
	if item == 0 {
		item = 1024
	}
	switch {
	case !f.set["load-items"] || f.loadItems < 1:
		return errors.New("-load-items: a bulk load needs the number of items, at least 1")
	case float64(f.loadItems)*float64(item) > maxBytes:
		return fmt.Errorf("-load-items %d: at %s bytes an item, more data than %s partitions of 10 GB hold",
			f.loadItems, num(float64(item)), num(partition.MaxPartitions))
	case !f.set["load-time"] || f.loadTime < time.Second:
		return errors.New("-load-time: a bulk load needs the time it may take, at least 1s")
	}
	return nil
}

// planTable prints the table's partitions initially, after -new-rcu and
// -new-wcu, and after each -split, and returns the last layout.
func planTable(w io.Writer, f *planFlags) (partition.Layout, error) {
	l, err := partition.NewLayout(f.rcu, f.wcu, int64(f.size))
	if err != nil {
		return l, err
	}
	fmt.Fprintf(w, "table: %s RCU, %s WCU, %s of data\n", num(f.rcu), num(f.wcu), f.size.String())
	printCounts(w, f.rcu, f.wcu, int64(f.size))
	printLayout(w, "initial", l)
	if f.any("new-rcu", "new-wcu") {
		r, wc := f.rcu, f.wcu
		if f.set["new-rcu"] {
			r = f.newRCU
		}
		if f.set["new-wcu"] {
			wc = f.newWCU
		}
		after, err := l.Provision(r, wc)
		if err != nil {
			return l, err
		}
		printLayout(w, fmt.Sprintf("after changing to %s RCU, %s WCU", num(r), num(wc)), after)
		need, _ := partition.ThroughputPartitions(r, wc) // Provision checked the figures
		switch {
		case after.Len() > l.Len():
			fmt.Fprintf(w, "  ceil(%s/3,000 + %s/1,000) = %d is more than %s: the count doubles until it is enough\n",
				num(r), num(wc), need, plural(l.Len(), "partition"))
		default:
			fmt.Fprintf(w, "  ceil(%s/3,000 + %s/1,000) = %d: the %s stay (partitions never merge)\n",
				num(r), num(wc), need, plural(l.Len(), "partition"))
		}
		l = after
	}
	for _, i := range f.splits {
		s, err := l.Split(i)
		if errors.Is(err, partition.ErrNoPartition) {
			return l, fmt.Errorf("%w: -split %d: the table has %s (0 to %d)", errUsage, i, plural(l.Len(), "partition"), l.Len()-1)
		}
		if err != nil {
			return l, err
		}
		l = s
		printLayout(w, fmt.Sprintf("after partition %d splits (its lower half stays %d, its upper half becomes %d)", i, i, l.Len()-1), l)
		printPartitions(w, l)
	}
	return l, nil
}

// printCounts prints how the initial partition count follows from the
// throughput and the size: the larger of the two, at least 1.
func printCounts(w io.Writer, rcu, wcu float64, size int64) {
	tp, _ := partition.ThroughputPartitions(rcu, wcu) // NewLayout checked the figures
	sp, _ := partition.SizePartitions(size)
	atLeast := func(zero bool, n int) string {
		if zero {
			return "0, so 1 (at least 1)"
		}
		return strconv.Itoa(n)
	}
	b := byteSize(size)
	fmt.Fprintf(w, "  partitions by throughput: ceil(%s/3,000 + %s/1,000) = %s\n", num(rcu), num(wcu), atLeast(rcu == 0 && wcu == 0, tp))
	fmt.Fprintf(w, "  partitions by size:       ceil(%s / 10 GB) = %s\n", b.String(), atLeast(size == 0, sp))
	fmt.Fprintf(w, "  partitions: the larger, %d\n", max(tp, sp))
}

func printLayout(w io.Writer, title string, l partition.Layout) {
	r, wc := l.Total()
	fmt.Fprintf(w, "%s: %s, %s RCU and %s WCU in all\n", title, plural(l.Len(), "partition"), num(r), num(wc))
	// Group equal partitions, in order of first appearance: "3 × 1,250
	// RCU / 500 WCU".
	var kinds []partition.Partition
	count := map[partition.Partition]int{}
	for _, p := range l.Partitions {
		if count[p] == 0 {
			kinds = append(kinds, p)
		}
		count[p]++
	}
	for _, p := range kinds {
		fmt.Fprintf(w, "  %d × %s RCU / %s WCU\n", count[p], num(p.RCU), num(p.WCU))
	}
}

// printPartitions lists every partition with its share of the key-hash
// space.
func printPartitions(w io.Writer, l partition.Layout) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  partition\tRCU\tWCU\tkey space\t")
	for i, p := range l.Partitions {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s %%\t\n", i, num(p.RCU), num(p.WCU), num(100*l.Ranges[i].Fraction()))
	}
	tw.Flush()
}

// planBulk prints the bulk load's plan and returns the table a hot key
// lives on afterwards (the load's when no -steady-wcu is given).
func planBulk(w io.Writer, f *planFlags) (partition.Layout, error) {
	p, err := partition.PlanBulkLoad(partition.BulkLoad{
		Items: f.loadItems, ItemBytes: f.itemBytes, Duration: f.loadTime, RCU: f.rcu, SteadyWCU: f.steadyWCU,
	})
	if err != nil {
		return partition.Layout{}, err
	}
	item, size := byteSize(max(f.itemBytes, 0)), byteSize(p.Bytes)
	if item == 0 {
		item = 1024
	}
	fmt.Fprintf(w, "bulk load: %s of %s, %d WCU each: %s WCU and %s of data in all\n",
		plural64(f.loadItems, "item"), item.String(), p.WCUPerItem, num(p.TotalWCU), size.String())
	printLoad(w, p)
	fmt.Fprintln(w, "during the load:")
	printCounts(w, f.rcu, p.WCU, p.Bytes)
	printLayout(w, "table", p.Load)
	if f.steadyWCU == 0 {
		fmt.Fprintln(w, "give -steady-wcu to see what lowering the WCU after the load leaves each partition")
		return p.Load, nil
	}
	printLayout(w, fmt.Sprintf("after lowering to %s WCU (partitions never merge)", num(f.steadyWCU)), p.Steady)
	if !p.Diluted {
		fmt.Fprintf(w, "a table created at %s WCU with this data would have as many partitions (%d): the load costs the steady state nothing\n",
			num(f.steadyWCU), p.Fresh.Len())
		return p.Steady, nil
	}
	share := p.Steady.MinWCU()
	fmt.Fprintf(w, "warning: after the load each of the %s serves only %s WCU/s (about %s), where a table created at %s WCU with this data would have %s of %s WCU; the keys of one partition writing more than %s WCU/s together are throttled\n",
		plural(p.Steady.Len(), "partition"), num(share), num(math.Round(share)), num(f.steadyWCU),
		plural(p.Fresh.Len(), "partition"), num(p.Fresh.MinWCU()), num(share))
	s := p.Slower
	fmt.Fprintf(w, "slower alternative: a load taking at least %s needs no more than %s; in %s:\n",
		fmtDuration(p.MinDuration), plural(p.Fresh.Len(), "partition"), fmtDuration(s.Duration))
	printLoad(w, *s)
	fmt.Fprintf(w, "  %s during the load; after lowering to %s WCU, %s of %s WCU\n",
		plural(s.Load.Len(), "partition"), num(f.steadyWCU), plural(s.Steady.Len(), "partition"), num(s.Steady.MinWCU()))
	return p.Steady, nil
}

// printLoad prints the rate a load needs and the WCU to provision for it.
func printLoad(w io.Writer, p partition.BulkLoadPlan) {
	how := "the rate to two significant figures, as the guide rounds it"
	if p.Floor {
		how = "the rate rounded down: two significant figures would add a partition"
	}
	fmt.Fprintf(w, "  %s WCU in %s = %s WCU/s: provision %s WCU (%s); at %s WCU the load takes %s\n",
		num(p.TotalWCU), fmtDuration(p.Duration), num(p.Rate), num(p.WCU), how, num(p.WCU), fmtDuration(p.LoadTime))
}

// planHot prints the shard count for one hot logical key, planned against
// table's smallest partition share when table is not nil.
func planHot(w io.Writer, f *planFlags, table *partition.Layout) error {
	work := partition.Workload{
		WritesPerSecond: f.writes, ItemBytes: f.itemBytes, ReadsPerSecond: f.reads,
		ReadBytes: int64(f.readBytes), Consistent: f.consistent, Utilization: f.util,
	}
	var rec partition.Recommendation
	var err error
	util := f.util
	if util == 0 {
		util = 0.5 // partition.Workload's default
	}
	budget := fmt.Sprintf("%s %% of DynamoDB's 1,000 WCU per-partition maximum (no table flags given)", num(100*util))
	if table != nil {
		rec, err = partition.RecommendFor(work, *table)
		budget = fmt.Sprintf("%s %% of %s WCU, the smallest partition share of this table, not DynamoDB's 1,000 WCU maximum",
			num(100*util), num(table.MinWCU()))
		if table.MinWCU() >= partition.PartitionWCU {
			budget = fmt.Sprintf("%s %% of %s WCU, this table's partition share (DynamoDB's per-partition maximum)",
				num(100*util), num(table.MinWCU()))
		}
	} else {
		rec, err = partition.Recommend(work)
	}
	if err != nil {
		return err
	}
	wcu := f.writes * float64(rec.WCUPerWrite)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "hot key: shard count N\t%d\n", rec.N)
	fmt.Fprintf(tw, "  WCU per write\t%d\n", rec.WCUPerWrite)
	fmt.Fprintf(tw, "  budget per physical key\t%s\n", budget)
	fmt.Fprintf(tw, "  peak WCU/s per physical key\t%s\n", num(rec.WCUPerKey))
	fmt.Fprintf(tw, "  Queries per whole-key read\t%d\n", rec.QueriesPerRead)
	fmt.Fprintf(tw, "  min RCU per whole-key read\t%s\n", num(rec.RCUPerRead))
	fmt.Fprintf(tw, "  Queries/s, min RCU/s for reads\t%s, %s\n", num(rec.QueriesPerSec), num(rec.RCUPerSec))
	tw.Flush()
	fmt.Fprintln(w, rec.Explanation)
	if table == nil {
		return nil
	}
	if _, total := table.Total(); wcu > total {
		fmt.Fprintf(w, "warning: the key alone needs %s WCU/s, more than the table's %s WCU: no shard count helps; raise the table's WCU\n",
			num(wcu), num(total))
	}
	if rec.N < table.Len() {
		fmt.Fprintf(w, "note: %s can reach at most %d of the table's %s\n",
			plural(rec.N, "key"), rec.N, plural(table.Len(), "partition"))
	}
	return nil
}
