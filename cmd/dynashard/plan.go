package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dynashard/dynashard/partition"
)

func runPlan(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("plan", stderr)
	rcu := fs.Float64("rcu", 0, "table: provisioned read capacity units")
	wcu := fs.Float64("wcu", 0, "table: provisioned write capacity units")
	var size byteSize
	fs.Var(&size, "size", "table: data size, in bytes or with KB, MB, GB, TB (powers of 1024)")
	newRCU := fs.Float64("new-rcu", -1, "table: RCU after a later change (default: unchanged)")
	newWCU := fs.Float64("new-wcu", -1, "table: WCU after a later change (default: unchanged)")

	writes := fs.Float64("writes", 0, "hot key: peak writes per second to one logical key")
	itemBytes := fs.Int("item-bytes", 0, "hot key: typical item size in bytes (default 1024)")
	reads := fs.Float64("reads", 0, "hot key: whole-key reads per second (each a scatter over N suffixes)")
	var readBytes byteSize
	fs.Var(&readBytes, "read-bytes", "hot key: data one whole-key read returns")
	consistent := fs.Bool("consistent", false, "hot key: strongly consistent reads")
	util := fs.Float64("utilization", 0, "hot key: planned fraction of 1,000 WCU per physical key (default 0.5)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dynashard plan [-rcu R] [-wcu W] [-size S] [-new-rcu R2] [-new-wcu W2] [-writes X] [-item-bytes B] [-reads Y] [-read-bytes S] [-consistent] [-utilization U]")
		fmt.Fprintln(stderr, "Table flags print the partition layout; hot-key flags print a shard-count recommendation.")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	table := set["rcu"] || set["wcu"] || set["size"] || set["new-rcu"] || set["new-wcu"]
	hot := set["writes"] || set["reads"] || set["item-bytes"] || set["read-bytes"] || set["utilization"] || set["consistent"]
	if !table && !hot {
		fs.Usage()
		return fmt.Errorf("%w: give table flags (-rcu, -wcu, -size) and/or hot-key flags (-writes, ...)", errUsage)
	}
	for name, v := range map[string]float64{"rcu": *rcu, "wcu": *wcu} {
		if v < 0 {
			return fmt.Errorf("%w: -%s must not be negative", errUsage, name)
		}
	}
	if table {
		l, err := partition.NewLayout(*rcu, *wcu, int64(size))
		if err != nil {
			return err
		}
		tp, _ := partition.ThroughputPartitions(*rcu, *wcu) // checked by NewLayout
		sp, _ := partition.SizePartitions(int64(size))
		fmt.Fprintf(stdout, "table: %g RCU, %g WCU, %s\n", *rcu, *wcu, size.String())
		fmt.Fprintf(stdout, "  partitions by throughput: ceil(%g/3000 + %g/1000) = %d\n", *rcu, *wcu, tp)
		fmt.Fprintf(stdout, "  partitions by size:       ceil(%s / 10 GB) = %d\n", size.String(), sp)
		printLayout(stdout, "initial", l)
		if set["new-rcu"] || set["new-wcu"] {
			r, w := *newRCU, *newWCU
			if r < 0 {
				r = *rcu
			}
			if w < 0 {
				w = *wcu
			}
			after, err := l.Provision(r, w)
			if err != nil {
				return err
			}
			printLayout(stdout, fmt.Sprintf("after changing to %g RCU, %g WCU", r, w), after)
		}
	}
	if hot {
		if table {
			fmt.Fprintln(stdout)
		}
		rec, err := partition.Recommend(partition.Workload{
			WritesPerSecond: *writes, ItemBytes: *itemBytes, ReadsPerSecond: *reads,
			ReadBytes: int64(readBytes), Consistent: *consistent, Utilization: *util,
		})
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "hot key: shard count N\t%d\n", rec.N)
		fmt.Fprintf(tw, "  WCU per write\t%d\n", rec.WCUPerWrite)
		fmt.Fprintf(tw, "  peak WCU/s per physical key\t%.1f\n", rec.WCUPerKey)
		fmt.Fprintf(tw, "  Queries per whole-key read\t%d\n", rec.QueriesPerRead)
		fmt.Fprintf(tw, "  min RCU per whole-key read\t%.1f\n", rec.RCUPerRead)
		fmt.Fprintf(tw, "  Queries/s, min RCU/s for reads\t%.1f, %.1f\n", rec.QueriesPerSec, rec.RCUPerSec)
		tw.Flush()
		fmt.Fprintln(stdout, rec.Explanation)
	}
	return nil
}

func printLayout(w io.Writer, title string, l partition.Layout) {
	r, wc := l.Total()
	fmt.Fprintf(w, "%s: %d partitions (total %s RCU, %s WCU)\n", title, l.Len(), num(r), num(wc))
	// Group equal neighbours: "3 × 1250 RCU / 500 WCU".
	for i := 0; i < l.Len(); {
		j := i
		for j < l.Len() && l.Partitions[j] == l.Partitions[i] {
			j++
		}
		fmt.Fprintf(w, "  %d × %s RCU / %s WCU\n", j-i, num(l.Partitions[i].RCU), num(l.Partitions[i].WCU))
		i = j
	}
}

// num prints a capacity figure with at most two decimals: 200 WCU over 11
// partitions is "18.18", not 18.181818181818183.
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// byteSize is a flag value in bytes accepting KB, MB, GB, TB suffixes
// (powers of 1024, as DynamoDB's "10 GB per partition").
type byteSize int64

func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return "0 B"
	}
	v := float64(*b)
	for _, u := range []string{"B", "KB", "MB", "GB"} {
		if v < 1024 {
			return strconv.FormatFloat(v, 'f', -1, 64) + " " + u
		}
		v /= 1024
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " TB"
}

func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for i, u := range []string{"KB", "MB", "GB", "TB"} {
		if strings.HasSuffix(s, u) {
			mult = 1 << (10 * (i + 1))
			s = strings.TrimSpace(strings.TrimSuffix(s, u))
			break
		}
	}
	s = strings.TrimSuffix(s, "B")
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 || v*float64(mult) > 1<<62 {
		return fmt.Errorf("bad size %q", s)
	}
	*b = byteSize(v * float64(mult))
	return nil
}
