package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dynashard/dynashard/internal/skew"
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
	want, err := skew.Analyze(slices.Values(ids), shard.Hash(100), shard.CodePointProduct(100), shard.Random(100))
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
		if !strings.HasPrefix(out, plural(len(ids), "id")+"\n") {
			t.Errorf("%q: output does not start with the id count:\n%s", args, out)
		}
		for _, r := range want[:2] { // Random's figures differ run to run
			for _, s := range []string{
				r.Strategy,
				fmt.Sprintf("%d of %d", r.N-r.Unused, r.N),
				fmt.Sprintf("%.3f", r.MaxMean),
				fmt.Sprintf("%d (%s, %.2f%%)", r.Hottest, plural(r.Max, "id"), 100*r.HotShare),
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
