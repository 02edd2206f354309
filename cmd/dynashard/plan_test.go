package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/dynashard/dynashard/partition"
)

// squash collapses runs of spaces, so that tabwriter's padding does not
// matter to a Contains.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func planOK(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, "", append([]string{"plan"}, args...)...)
	if code != 0 {
		t.Fatalf("plan %q: exit %d, stderr:\n%s", args, code, errOut)
	}
	return squash(out)
}

func wantLines(t *testing.T, args []string, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, squash(w)) {
			t.Errorf("plan %q: output lacks %q:\n%s", args, w, out)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	const target = "http://127.0.0.1:8001"
	tests := []struct {
		args []string
		flag string // the flag the message must name; "" for none
	}{
		{[]string{}, ""},
		{[]string{"nope"}, ""},
		{[]string{"analyze", "-n", "0"}, "-n"},
		{[]string{"analyze", "-n", "10001"}, "-n"},
		{[]string{"analyze", "-strategies", "md5"}, "-strategies"},
		{[]string{"analyze", "a", "b"}, ""},
		{[]string{"analyze", "-bogus"}, "-bogus"},
		{[]string{"plan"}, ""},
		{[]string{"plan", "extra"}, ""},
		{[]string{"plan", "-rcu", "-1"}, "-rcu"},
		{[]string{"plan", "-writes", "-5"}, "-writes"},
		{[]string{"plan", "-wcu", "10", "-new-wcu", "-5"}, "-new-wcu"},
		{[]string{"plan", "-size", "ten"}, "-size"},
		{[]string{"plan", "-size", "20"}, "-size"}, // a bare number
		{[]string{"plan", "-size", "0"}, "-size"},
		{[]string{"plan", "-size", "1PB"}, "-size"},
		{[]string{"plan", "-size", "-1GB"}, "-size"},
		{[]string{"plan", "-writes", "10", "-read-bytes", "4096"}, "-read-bytes"},
		{[]string{"plan", "-rcu", "5000", "-wcu", "2000", "-split", "4"}, "-split"},
		{[]string{"plan", "-rcu", "5000", "-wcu", "2000", "-split", "x"}, "-split"},
		{[]string{"plan", "-rcu", "5000", "-wcu", "2000", "-split", "-1"}, "-split"},
		{[]string{"plan", "-load-items", "1000"}, "-load-time"},
		{[]string{"plan", "-load-time", "30m"}, "-load-items"},
		{[]string{"plan", "-steady-wcu", "200"}, "-load-items"},
		{[]string{"plan", "-load-items", "1000", "-load-time", "10ms"}, "-load-time"},
		{[]string{"plan", "-load-items", "1000", "-load-time", "1m", "-wcu", "100"}, "-wcu"},
		{[]string{"plan", "-load-items", "1000", "-load-time", "1m", "-size", "1GB"}, "-size"},
		{[]string{"plan", "-load-items", "1000", "-load-time", "1m", "-split", "0"}, "-split"},
		{[]string{"plan", "-load-items", "1000", "-load-time", "1m", "-steady-wcu", "-3"}, "-steady-wcu"},
		{[]string{"proxy"}, "-target"},
		{[]string{"proxy", "-target", "127.0.0.1:8000"}, "-target"},
		{[]string{"proxy", "-target", "ftp://127.0.0.1:8000"}, "-target"},
		{[]string{"proxy", "-target", target, "extra"}, ""},
		{[]string{"proxy", "-target", target, "-listen", "8000"}, "-listen"},
		{[]string{"proxy", "-target", target, "-listen", "127.0.0.1:99999"}, "-listen"},
		{[]string{"proxy", "-target", target, "-model", "lsm"}, "-model"},
		{[]string{"proxy", "-target", target, "-model", "partitioned", "-wcu", "100"}, "-wcu"}, // a per-key flag, partition model
		{[]string{"proxy", "-target", target, "-burst-window", "1s"}, "-burst-window"},         // a partition flag, the default per-key model
		{[]string{"proxy", "-target", target, "-model", "perkey", "-table", "a=1,1"}, "-table"},
		{[]string{"proxy", "-target", target, "-model", "perkey", "-time-scale", "2"}, "-time-scale"},
		{[]string{"proxy", "-target", target, "-model", "perkey", "-wcu", "-5"}, "-wcu"},
		{[]string{"proxy", "-target", target, "-model", "perkey", "-rcu", "Inf"}, "-rcu"},
		{[]string{"proxy", "-target", target, "-model", "partitioned", "-table", "orders"}, "-table"},
		{[]string{"proxy", "-target", target, "-table", "=1,1"}, "-table"},
		{[]string{"proxy", "-target", target, "-table", "orders=1,x"}, "-table"},
		{[]string{"proxy", "-target", target, "-table", "orders=-1,1"}, "-table"},
		{[]string{"proxy", "-target", target, "-model", "partitioned", "-adaptive", "sometimes"}, "-adaptive"},
		{[]string{"proxy", "-target", target, "-model", "partitioned", "-adaptive-delay", "-1m"}, "-adaptive-delay"},
		{[]string{"proxy", "-target", target, "-model", "partitioned", "-burst-window", "-1s"}, "-burst-window"},
		{[]string{"proxy", "-target", target, "-partition-size", "64"}, "-partition-size"}, // a bare number
		{[]string{"proxy", "-target", target, "-model", "partitioned", "-partition-size", "0B"}, "-partition-size"},
		{[]string{"proxy", "-target", target, "-model", "partitioned", "-time-scale", "0"}, "-time-scale"},
		{[]string{"proxy", "-target", target, "-model", "partitioned", "-time-scale", "2e6"}, "-time-scale"},
		{[]string{"proxy", "-target", target, "-unprocessed", "2"}, "-unprocessed"},
		{[]string{"proxy", "-target", target, "-throttle", "-0.1"}, "-throttle"},
		{[]string{"proxy", "-target", target, "-error", "NaN"}, "-error"},
		{[]string{"proxy", "-target", target, "-truncate", "1.5"}, "-truncate"},
		{[]string{"proxy", "-target", target, "-latency", "-1s"}, "-latency"},
		{[]string{"proxy", "-target", target, "-stats", "-1s"}, "-stats"},
		{[]string{"proxy", "-target", target, "-seed", "x"}, "-seed"},
	}
	for _, tt := range tests {
		code, _, errOut := runCLI(t, "", tt.args...)
		if code != 2 || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", tt.args, code, errOut)
		}
		// The last line is the command's own message (the flag package
		// may print the usage before it).
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if last := lines[len(lines)-1]; tt.flag != "" && !strings.Contains(last, tt.flag) {
			t.Errorf("%q: message %q does not name %s", tt.args, last, tt.flag)
		}
	}
	if code, _, _ := runCLI(t, "", "analyze", filepath.Join(t.TempDir(), "missing")); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
	for _, args := range [][]string{
		{"plan", "-writes", "6e6"},                                   // more than shard.MaxN shards at 50 %
		{"plan", "-rcu", "5000", "-writes", "10"},                    // a table without write capacity
		{"plan", "-load-items", "1000000000000", "-load-time", "1s"}, // more than MaxPartitions
	} {
		if code, _, _ := runCLI(t, "", args...); code != 1 {
			t.Errorf("%q: exit %d, want 1", args, code)
		}
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"-help"}, {"--help"}, {"analyze", "-h"}, {"plan", "-h"}, {"plan", "--help"}, {"proxy", "-h"}} {
		code, out, errOut := runCLI(t, "", args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "usage: dynashard") {
			t.Errorf("%q: exit %d, stderr %q, stdout %d bytes; want 0, the usage asked for on stdout and nothing on stderr", args, code, errOut, len(out))
		}
	}
}

// TestPlanRanges checks that every numeric flag of plan out of its range
// (NaN, Inf, negative, too large for any table the model holds) is a usage
// error naming the flag, and that nothing is printed before an error.
func TestPlanRanges(t *testing.T) {
	tests := []struct {
		name string
		args []string
		flag string // the flag the message must name
	}{
		{"rcu NaN", []string{"-rcu", "NaN"}, "-rcu"},
		{"rcu Inf", []string{"-rcu", "Inf", "-wcu", "10"}, "-rcu"},
		{"rcu too large", []string{"-rcu", "3.1e8"}, "-rcu"},
		{"wcu -Inf", []string{"-wcu", "-Inf"}, "-wcu"},
		{"wcu too large", []string{"-wcu", "1e300"}, "-wcu"},
		{"new-rcu too large", []string{"-new-rcu", "1e300"}, "-new-rcu"},
		{"new-rcu too large on a table", []string{"-rcu", "10", "-wcu", "10", "-new-rcu", "1e300"}, "-new-rcu"},
		{"new-wcu NaN", []string{"-wcu", "10", "-new-wcu", "NaN"}, "-new-wcu"},
		{"steady-wcu NaN", []string{"-load-items", "10", "-load-time", "1s", "-steady-wcu", "NaN"}, "-steady-wcu"},
		{"writes too large", []string{"-writes", "1e308"}, "-writes"},
		{"writes NaN", []string{"-writes", "NaN"}, "-writes"},
		{"writes zero", []string{"-writes", "0"}, "-writes"},
		{"writes missing", []string{"-reads", "5"}, "-writes"},
		{"writes zero on a table", []string{"-wcu", "100", "-writes", "0"}, "-writes"},
		{"reads too large", []string{"-reads", "1e308", "-writes", "10", "-read-bytes", "1TB"}, "-reads"},
		{"reads Inf", []string{"-reads", "Inf", "-writes", "10"}, "-reads"},
		{"utilization above 1", []string{"-writes", "10", "-utilization", "2"}, "-utilization"},
		{"utilization zero", []string{"-writes", "10", "-utilization", "0"}, "-utilization"},
		{"utilization negative", []string{"-writes", "10", "-utilization", "-0.5"}, "-utilization"},
		{"utilization NaN", []string{"-writes", "10", "-utilization", "NaN"}, "-utilization"},
		{"item-bytes negative", []string{"-item-bytes", "-1"}, "-item-bytes"},
		{"item-bytes over the item limit", []string{"-writes", "10", "-item-bytes", "409601"}, "-item-bytes"},
		{"item-bytes over the limit in a load", []string{"-load-items", "10", "-load-time", "1s", "-item-bytes", "1000000"}, "-item-bytes"},
		{"load-items beyond any table", []string{"-load-items", "9223372036854775807", "-load-time", "1s"}, "-load-items"},
		{"size beyond any table", []string{"-wcu", "10", "-size", "2000TB"}, "-size"},
		{"read-bytes beyond any table", []string{"-writes", "10", "-read-bytes", "2000TB"}, "-read-bytes"},
		{"split past the table", []string{"-wcu", "10", "-split", "7"}, "-split"},
		{"split past the table after a split", []string{"-wcu", "10", "-split", "0", "-split", "2"}, "-split"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"plan"}, tt.args...)
			code, out, errOut := runCLI(t, "", args...)
			if code != 2 {
				t.Errorf("%q: exit %d, want 2; stderr %q", args, code, errOut)
			}
			if out != "" {
				t.Errorf("%q: printed before failing:\n%s", args, out)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(last, tt.flag) {
				t.Errorf("%q: message %q does not name %s", args, last, tt.flag)
			}
			if strings.Contains(last, "{") {
				t.Errorf("%q: message %q dumps a struct", args, last)
			}
		})
	}
}

// TestPlanFigures runs plan over a grid of edge values of every numeric
// flag: whatever it answers, exit 0 prints only finite figures, exit 2
// names a flag, and a failure prints nothing on stdout.
func TestPlanFigures(t *testing.T) {
	figures := []string{"0", "1e-300", "0.5", "1", "3.1e8", "1e7", "NaN"}
	var cases [][]string
	for _, v := range figures {
		cases = append(cases,
			[]string{"-rcu", v, "-wcu", "1000", "-writes", "100"},
			[]string{"-wcu", v, "-writes", "100", "-split", "0"},
			[]string{"-wcu", "1000", "-new-wcu", v, "-new-rcu", v},
			[]string{"-writes", v, "-reads", v, "-read-bytes", "900TB", "-consistent"},
			[]string{"-writes", "1e7", "-reads", "6e8", "-read-bytes", "900TB", "-utilization", "1"},
			[]string{"-load-items", "1000000000", "-load-time", "1s", "-steady-wcu", v, "-writes", "1"},
			[]string{"-load-items", "1", "-load-time", "2000000h", "-steady-wcu", v, "-rcu", v},
		)
	}
	badFigure := regexp.MustCompile(`Inf|NaN|e\+\d`)
	for _, args := range cases {
		args = append([]string{"plan"}, args...)
		code, out, errOut := runCLI(t, "", args...)
		switch code {
		case 0:
			if m := badFigure.FindString(out); m != "" {
				t.Errorf("%q: exit 0 with figure %q:\n%s", args, m, out)
			}
		case 1, 2:
			if out != "" {
				t.Errorf("%q: exit %d after printing:\n%s", args, code, out)
			}
			if code == 2 && !strings.Contains(errOut, ": -") {
				t.Errorf("%q: usage error %q names no flag", args, errOut)
			}
		default:
			t.Errorf("%q: exit %d", args, code)
		}
	}
}

// The DynamoDB guide's worked examples, through the CLI: their figures are
// the specification, so they are written out here.
func TestPlanGuideExamples(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"-rcu", "1000", "-wcu", "500"}, []string{"initial: 1 partition,", "1 × 1,000 RCU / 500 WCU"}},
		{[]string{"-rcu", "1000", "-wcu", "1000"}, []string{"initial: 2 partitions,", "2 × 500 RCU / 500 WCU"}},
		{[]string{"-rcu", "5000", "-wcu", "2000", "-new-rcu", "8000"},
			[]string{"4 × 1,250 RCU / 500 WCU", "8 partitions", "8 × 1,000 RCU / 250 WCU", "= 5 is more than 4 partitions: the count doubles"}},
		// The storage split: one of four partitions splits into two of
		// half its throughput each.
		{[]string{"-rcu", "5000", "-wcu", "2000", "-split", "1"},
			[]string{"after partition 1 splits", "5 partitions, 5,000 RCU and 2,000 WCU in all",
				"3 × 1,250 RCU / 500 WCU", "2 × 625 RCU / 250 WCU", "1 625 250 12.5 %", "4 625 250 12.5 %"}},
		{[]string{"-wcu", "11000", "-size", "20GB", "-new-wcu", "200"},
			[]string{"= 11", "ceil(20 GB / 10 GB) = 2", "11 × 0 RCU / 18.18 WCU", "the 11 partitions stay (partitions never merge)"}},
		// The bulk load: 20,000,000 items of 1 KB in 30 minutes.
		{[]string{"-load-items", "20000000", "-item-bytes", "1024", "-load-time", "30m", "-steady-wcu", "200"},
			[]string{"provision 11,000 WCU", "table: 11 partitions", "11 × 0 RCU / 18.18 WCU", "(about 18)",
				"warning: after the load each of the 11 partitions serves only 18.18 WCU/s",
				"in 3h:", "provision 1,900 WCU", "2 partitions during the load; after lowering to 200 WCU, 2 partitions of 100 WCU"}},
	}
	for _, tt := range tests {
		wantLines(t, tt.args, planOK(t, tt.args...), tt.want...)
	}

	// A hot key of 1,500 writes/s: alone, N = 3 at 500 WCU per key; on the
	// guide's 5,000 RCU / 2,000 WCU table, whose partitions have 500 WCU
	// each, not N = 3 but a plan against 500 WCU that says so.
	args := []string{"-writes", "1500"}
	wantLines(t, args, planOK(t, args...), "shard count N 3", "peak WCU/s per physical key 500", "1,000 WCU per-partition maximum")
	args = []string{"-rcu", "5000", "-wcu", "2000", "-writes", "1500"}
	out := planOK(t, args...)
	wantLines(t, args, out, "budget per physical key 50 % of 500 WCU, the smallest partition share of this table")
	if strings.Contains(out, "shard count N 3\n") {
		t.Errorf("plan %q still recommends N = 3:\n%s", args, out)
	}
}

// The same commands' figures, computed with package partition.
func TestPlanFromPartition(t *testing.T) {
	t.Run("split", func(t *testing.T) {
		l, err := partition.NewLayout(5000, 2000, 0)
		if err != nil {
			t.Fatal(err)
		}
		if l, err = l.Split(1); err != nil {
			t.Fatal(err)
		}
		if l, err = l.Split(3); err != nil {
			t.Fatal(err)
		}
		args := []string{"-rcu", "5000", "-wcu", "2000", "-split", "1", "-split", "3"}
		out := planOK(t, args...)
		var want []string
		for i, p := range l.Partitions {
			want = append(want, fmt.Sprintf("%d %s %s %s %%", i, num(p.RCU), num(p.WCU), num(100*l.Ranges[i].Fraction())))
		}
		wantLines(t, args, out, append(want, plural(l.Len(), "partition")+", 5,000 RCU and 2,000 WCU in all")...)
	})
	t.Run("bulk load", func(t *testing.T) {
		for _, b := range []partition.BulkLoad{
			{Items: 20_000_000, ItemBytes: 1024, Duration: 30 * time.Minute, SteadyWCU: 200},
			{Items: 3_000_000, ItemBytes: 2500, Duration: 20 * time.Minute, SteadyWCU: 40, RCU: 1000},
			{Items: 50_000, ItemBytes: 1000, Duration: 10 * time.Minute, SteadyWCU: 100},
		} {
			p, err := partition.PlanBulkLoad(b)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"-load-items", fmt.Sprint(b.Items), "-item-bytes", fmt.Sprint(b.ItemBytes),
				"-load-time", b.Duration.String(), "-steady-wcu", fmt.Sprint(b.SteadyWCU), "-rcu", fmt.Sprint(b.RCU)}
			out := planOK(t, args...)
			want := []string{
				fmt.Sprintf("%s WCU in %s = %s WCU/s: provision %s WCU", num(p.TotalWCU), fmtDuration(b.Duration), num(p.Rate), num(p.WCU)),
				fmt.Sprintf("the load takes %s", fmtDuration(p.LoadTime)),
				fmt.Sprintf("table: %s,", plural(p.Load.Len(), "partition")),
				fmt.Sprintf("%d × %s RCU / %s WCU", p.Steady.Len(), num(p.Steady.Partitions[0].RCU), num(p.Steady.MinWCU())),
			}
			if p.Diluted {
				s := p.Slower
				want = append(want, "warning: after the load",
					fmt.Sprintf("at least %s needs no more than %s; in %s:", fmtDuration(p.MinDuration), plural(p.Fresh.Len(), "partition"), fmtDuration(s.Duration)),
					fmt.Sprintf("provision %s WCU", num(s.WCU)),
					fmt.Sprintf("%s during the load", plural(s.Load.Len(), "partition")))
			} else if strings.Contains(out, "warning") {
				t.Errorf("plan %q warns about a load that is not diluted:\n%s", args, out)
			}
			wantLines(t, args, out, want...)
		}
	})
	t.Run("hot key on a table", func(t *testing.T) {
		for _, tc := range []struct {
			rcu, wcu, writes float64
			splits           []int
		}{
			{5000, 2000, 1500, nil},
			{5000, 2000, 600, []int{1, 4}},
			{0, 8000, 3000, nil},
			{0, 200, 50, nil},
		} {
			l, err := partition.NewLayout(tc.rcu, tc.wcu, 0)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"-rcu", fmt.Sprint(tc.rcu), "-wcu", fmt.Sprint(tc.wcu), "-writes", fmt.Sprint(tc.writes)}
			for _, i := range tc.splits {
				if l, err = l.Split(i); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-split", fmt.Sprint(i))
			}
			rec, err := partition.RecommendFor(partition.Workload{WritesPerSecond: tc.writes}, l)
			if err != nil {
				t.Fatal(err)
			}
			if rec.WCUPerKey > 0.5*l.MinWCU()+1e-9 {
				t.Errorf("%q: %v WCU per key over half the %v WCU share", args, rec.WCUPerKey, l.MinWCU())
			}
			wantLines(t, args, planOK(t, args...),
				fmt.Sprintf("shard count N %d", rec.N),
				fmt.Sprintf("peak WCU/s per physical key %s", num(rec.WCUPerKey)),
				fmt.Sprintf("50 %% of %s WCU", num(l.MinWCU())),
				rec.Explanation)
		}
	})
	t.Run("hot key after a bulk load", func(t *testing.T) {
		b := partition.BulkLoad{Items: 20_000_000, Duration: 30 * time.Minute, SteadyWCU: 200}
		p, err := partition.PlanBulkLoad(b)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := partition.RecommendFor(partition.Workload{WritesPerSecond: 100}, p.Steady)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"-load-items", "20000000", "-load-time", "30m", "-steady-wcu", "200", "-writes", "100"}
		wantLines(t, args, planOK(t, args...), fmt.Sprintf("shard count N %d", rec.N), rec.Explanation)
	})
	t.Run("hot key alone", func(t *testing.T) {
		w := partition.Workload{WritesPerSecond: 5000, ItemBytes: 1500, ReadsPerSecond: 2, ReadBytes: 8 << 20, Consistent: true}
		rec, err := partition.Recommend(w)
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"-writes", "5000", "-item-bytes", "1500", "-reads", "2", "-read-bytes", "8MB", "-consistent"}
		wantLines(t, args, planOK(t, args...), fmt.Sprintf("shard count N %d", rec.N), rec.Explanation, num(rec.RCUPerRead))
	})
}

// Every count in every plan's output agrees in number with its noun.
func TestPlanPlurals(t *testing.T) {
	wrongPlural := regexp.MustCompile(`(^|[^\d,.])1 (partitions|items|ids|keys|Queries)\b`)
	wrongSingular := regexp.MustCompile(`(^|[^\d,.])(\d{2,}|[02-9]|\d{1,3}(,\d{3})+) (partition|item|id|key|Query)\b([^-]|$)`)
	for _, args := range [][]string{
		{"-wcu", "500"},
		{"-wcu", "1000", "-rcu", "1000", "-new-wcu", "3000"},
		{"-rcu", "5000", "-wcu", "2000", "-split", "1"},
		{"-wcu", "1000", "-writes", "100"},
		{"-wcu", "1", "-split", "0"},
		{"-load-items", "1", "-load-time", "1s", "-steady-wcu", "1"},
		{"-load-items", "20000000", "-load-time", "30m", "-steady-wcu", "200", "-writes", "1"},
		{"-load-items", "2", "-load-time", "1s"},
		{"-writes", "1"},
	} {
		out := planOK(t, args...)
		for _, re := range []*regexp.Regexp{wrongPlural, wrongSingular} {
			if m := re.FindString(out); m != "" {
				t.Errorf("plan %q: %q:\n%s", args, m, out)
			}
		}
	}
	_, out, _ := runCLI(t, "ORD-1\n", "analyze", "-n", "2")
	if !strings.HasPrefix(out, "1 id\n") || !strings.Contains(out, "(1 id,") {
		t.Errorf("analyze of one id:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	want := "(devel)"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		want = info.Main.Version
	}
	for _, flag := range []string{"--version", "-version"} {
		code, out, errOut := runCLI(t, "", flag)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "dynashard "+want) || strings.Count(out, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0 and one line %q", flag, code, out, errOut, "dynashard "+want)
		}
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0B", 0}, {"123B", 123}, {"123 b", 123}, {"1KB", 1024}, {"1KiB", 1024}, {"1.5 mb", 1536 << 10},
		{"1.5MiB", 1536 << 10}, {"20GB", 20 << 30}, {"20gib", 20 << 30}, {"2TB", 2 << 40}, {"2TiB", 2 << 40},
	}
	for _, tt := range tests {
		var b byteSize
		if err := b.Set(tt.in); err != nil || int64(b) != tt.want {
			t.Errorf("Set(%q) = %d, %v, want %d", tt.in, b, err, tt.want)
		}
	}
	for _, bad := range []string{"", "0", "123", "1e3", "x", "GB", "-1KB", "1PB", "1e30GB", "NaNGB", "1 2GB"} {
		var b byteSize
		if err := b.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted as %d", bad, b)
		}
	}
	for _, tt := range []struct {
		b    byteSize
		want string
	}{{0, "0 B"}, {1023, "1,023 B"}, {20 << 30, "20 GB"}, {20_480_000_000, "19.07 GB"}, {3 << 40, "3 TB"}} {
		if got := tt.b.String(); got != tt.want {
			t.Errorf("byteSize(%d) = %q, want %q", int64(tt.b), got, tt.want)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, tt := range []struct {
		f    float64
		want string
	}{{0, "0"}, {18.181818, "18.18"}, {1250, "1,250"}, {11000, "11,000"}, {20_000_000, "20,000,000"}, {312.5, "312.5"}, {-1500, "-1,500"}, {1e-9, "0"}} {
		if got := num(tt.f); got != tt.want {
			t.Errorf("num(%v) = %q, want %q", tt.f, got, tt.want)
		}
	}
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{30 * time.Minute, "30m"}, {3 * time.Hour, "3h"}, {10_000 * time.Second, "2h46m40s"}, {time.Hour + 5*time.Second, "1h5s"}} {
		if got := fmtDuration(tt.d); got != tt.want {
			t.Errorf("fmtDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := plural(1, "Query") + ", " + plural(2, "Query") + ", " + plural(1000, "item"); got != "1 Query, 2 Queries, 1,000 items" {
		t.Errorf("plural: %q", got)
	}
}
