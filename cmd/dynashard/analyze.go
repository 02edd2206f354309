package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dynashard/dynashard/internal/skew"
	"github.com/dynashard/dynashard/shard"
)

// strategyByName maps -strategies names to constructors.
var strategyByName = map[string]func(int) shard.Strategy{
	"hash":      shard.Hash,
	"codepoint": shard.CodePointProduct,
	"random":    shard.Random,
}

func runAnalyze(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("analyze", stderr)
	n := fs.Int("n", 200, "shard count N (suffixes 1..N)")
	names := fs.String("strategies", "hash,codepoint", "comma-separated strategies: hash, codepoint, random")
	counts := fs.Bool("counts", false, "also print the number of ids on every suffix")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: dynashard analyze [-n 200] [-strategies hash,codepoint] [-counts] [file|-]")
		fmt.Fprintln(fs.Output(), "Reads ids, one per line (empty lines skipped), from file or standard input.")
		fs.PrintDefaults()
	}
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if err := shard.CheckN(*n); err != nil {
		return fmt.Errorf("%w: -n: %v", errUsage, err)
	}
	var strategies []skew.Strategy
	for _, name := range strings.Split(*names, ",") {
		ctor, ok := strategyByName[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("%w: -strategies: unknown strategy %q (want hash, codepoint or random)", errUsage, name)
		}
		strategies = append(strategies, ctor(*n))
	}
	var in io.Reader
	switch fs.NArg() {
	case 0:
		in = stdin
	case 1:
		if fs.Arg(0) == "-" {
			in = stdin
			break
		}
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	default:
		return fmt.Errorf("%w: want at most one file, got %q", errUsage, fs.Args())
	}

	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	ids := func(yield func(string) bool) {
		for sc.Scan() {
			line := strings.TrimSuffix(sc.Text(), "\r")
			if line == "" {
				continue
			}
			if !yield(line) {
				return
			}
		}
	}
	reports, err := skew.Analyze(ids, strategies...)
	if err != nil {
		return err
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading ids: %w", err)
	}
	printReports(stdout, reports, *counts)
	return nil
}

func printReports(w io.Writer, reports []skew.Report, counts bool) {
	if len(reports) == 0 {
		return
	}
	fmt.Fprintf(w, "%s\n\n", plural(reports[0].IDs, "id"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(label string, f func(r skew.Report) string) {
		fmt.Fprint(tw, label)
		for _, r := range reports {
			fmt.Fprint(tw, "\t", f(r))
		}
		fmt.Fprintln(tw, "\t")
	}
	row("strategy", func(r skew.Report) string { return r.Strategy })
	row("suffixes used", func(r skew.Report) string { return fmt.Sprintf("%d of %d", r.N-r.Unused, r.N) })
	row("mean per suffix", func(r skew.Report) string { return strconv.FormatFloat(r.Mean, 'f', 1, 64) })
	row("max/mean", func(r skew.Report) string { return strconv.FormatFloat(r.MaxMean, 'f', 3, 64) })
	row("hottest suffix", func(r skew.Report) string {
		return fmt.Sprintf("%d (%s, %.2f%%)", r.Hottest, plural(r.Max, "id"), 100*r.HotShare)
	})
	row("chi-square", func(r skew.Report) string { return fmt.Sprintf("%.1f (dof %d)", r.ChiSquare, r.N-1) })
	row("p-value", func(r skew.Report) string { return strconv.FormatFloat(r.PValue, 'g', 3, 64) })
	row("verdict", func(r skew.Report) string { return string(r.Verdict) })
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range reports {
		fmt.Fprintf(w, "%s: %s: %s\n", r.Strategy, r.Verdict, r.Conclusion)
	}
	if !counts {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "suffix")
	for _, r := range reports {
		fmt.Fprint(tw, "\t", r.Strategy)
	}
	fmt.Fprintln(tw, "\t")
	for i := range reports[0].N {
		fmt.Fprint(tw, i+1)
		for _, r := range reports {
			fmt.Fprint(tw, "\t", r.Counts[i])
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
}
