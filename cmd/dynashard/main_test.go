package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dynashard/dynashard/partition"
	"github.com/dynashard/dynashard/shard"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func orderIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ORD-%08d", i+1)
	}
	return ids
}

func TestAnalyze(t *testing.T) {
	ids := orderIDs(20000)
	input := strings.Join(ids, "\r\n") + "\n\n" // CRLF and blank lines are tolerated
	file := filepath.Join(t.TempDir(), "ids.txt")
	if err := os.WriteFile(file, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := shard.Analyze(slices.Values(ids), shard.Hash(100), shard.CodePointProduct(100), shard.Random(100))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"analyze", "-n", "100", "-strategies", "hash,codepoint,random", "-counts"},
		{"analyze", "-n", "100", "-strategies", "hash,codepoint,random", "-counts", "-"},
		{"analyze", "-n", "100", "-strategies", "hash, codepoint,random", "-counts", file},
	} {
		code, out, errOut := runCLI(t, input, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d, stderr %s", args, code, errOut)
		}
		if !strings.HasPrefix(out, fmt.Sprintf("%d ids\n", len(ids))) {
			t.Errorf("%q: output does not start with the id count:\n%s", args, out)
		}
		for _, r := range want[:2] { // Random's figures differ run to run
			for _, s := range []string{
				r.Strategy,
				fmt.Sprintf("%d of %d", r.N-r.Unused, r.N),
				fmt.Sprintf("%.3f", r.MaxMean),
				fmt.Sprintf("%d (%d ids, %.2f%%)", r.Hottest, r.Max, 100*r.HotShare),
				fmt.Sprintf("%s: %s: %s", r.Strategy, r.Verdict, r.Conclusion),
			} {
				if !strings.Contains(out, s) {
					t.Errorf("%q: output lacks %q:\n%s", args, s, out)
				}
			}
		}
		// -counts: one row per suffix with each strategy's count.
		for i := range 100 {
			row := fmt.Sprintf("%d  %d  %d", i+1, want[0].Counts[i], want[1].Counts[i])
			if !strings.Contains(strings.Join(strings.Fields(out), "  "), row) {
				t.Errorf("%q: counts lack row %q", args, row)
				break
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := [][]string{
		{},
		{"nope"},
		{"analyze", "-n", "0"},
		{"analyze", "-n", "10001"},
		{"analyze", "-strategies", "md5"},
		{"analyze", "a", "b"},
		{"analyze", "-bogus"},
		{"plan"},
		{"plan", "-rcu", "-1"},
		{"plan", "-size", "ten"},
		{"plan", "extra"},
	}
	for _, args := range tests {
		if code, _, errOut := runCLI(t, "", args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, errOut)
		}
	}
	if code, _, _ := runCLI(t, "", "analyze", filepath.Join(t.TempDir(), "missing")); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
	if code, _, _ := runCLI(t, "", "plan", "-writes", "1e12"); code != 1 {
		t.Errorf("unplannable workload: exit %d, want 1", code)
	}
	for _, args := range [][]string{{"help"}, {"analyze", "-h"}, {"plan", "-h"}} {
		if code, _, _ := runCLI(t, "", args...); code != 0 {
			t.Errorf("%q: exit %d, want 0", args, code)
		}
	}
}

// The worked examples of DESIGN.md, through the CLI.
func TestPlanWorkedExamples(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"-rcu", "1000", "-wcu", "500"}, []string{"initial: 1 partitions", "1 × 1000 RCU / 500 WCU"}},
		{[]string{"-rcu", "1000", "-wcu", "1000"}, []string{"initial: 2 partitions", "2 × 500 RCU / 500 WCU"}},
		{[]string{"-rcu", "5000", "-wcu", "2000", "-new-rcu", "8000"}, []string{"4 × 1250 RCU / 500 WCU", "8 partitions", "8 × 1000 RCU / 250 WCU"}},
		{[]string{"-wcu", "11000", "-size", "20GB", "-new-wcu", "200"}, []string{"= 11", "ceil(20 GB / 10 GB) = 2", "11 × 0 RCU / 18.18 WCU"}},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, "", append([]string{"plan"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tt.args, code, errOut)
		}
		for _, s := range tt.want {
			if !strings.Contains(out, s) {
				t.Errorf("%q: output lacks %q:\n%s", tt.args, s, out)
			}
		}
	}
}

func TestPlanRecommend(t *testing.T) {
	w := partition.Workload{WritesPerSecond: 5000, ItemBytes: 1500, ReadsPerSecond: 2, ReadBytes: 8 << 20, Consistent: true}
	rec, err := partition.Recommend(w)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "plan", "-writes", "5000", "-item-bytes", "1500", "-reads", "2", "-read-bytes", "8MB", "-consistent")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{fmt.Sprintf("shard count N  %d", rec.N), rec.Explanation, fmt.Sprintf("%.1f", rec.RCUPerRead)} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(s), " ")) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"123", 123}, {"123B", 123}, {"1KB", 1024}, {"1.5 mb", 1536 << 10}, {"20GB", 20 << 30}, {"2TB", 2 << 40},
	}
	for _, tt := range tests {
		var b byteSize
		if err := b.Set(tt.in); err != nil || int64(b) != tt.want {
			t.Errorf("Set(%q) = %d, %v, want %d", tt.in, b, err, tt.want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1PB", "1e30GB"} {
		var b byteSize
		if err := b.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted as %d", bad, b)
		}
	}
}
