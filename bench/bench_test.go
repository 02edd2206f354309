package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// TestBench runs every scenario with tiny sizes against each test server
// and checks the report's rows and files, not its figures.
func TestBench(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		dir := t.TempDir()
		const ids, skewN = 500, 10
		code, out, errOut := runCLI(t, "-endpoint", s.Endpoint,
			"-n", "2", "-duration", "300ms", "-warmup", "100ms",
			"-read-n", "2", "-read-items", "2", "-reps", "1", "-latency", "1ms",
			"-merge-shards", "3", "-merge-items", "10", "-merge-time", "0",
			"-ids", fmt.Sprint(ids), "-skew-n", fmt.Sprint(skewN),
			"-load-keys", "2", "-load-seconds", "0.05",
			"-chunk-mib", "1", "-chunk-reps", "1",
			"-out", dir)
		if code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
		want := []string{
			"## 1. Hot-day writes", "| unsharded | 1 | 8 |", "| sharded | 2 | 8 |",
			"## 2. Day reads", "| 2 | 4 |",
			"## 3. Merge", "| heap merge (scatter.All) |", "| collect and sort |", "| no order (scatter.All, Unordered) |",
			"## 4. Calculated strategies",
			"## 5. Bulk load", "| sorted |", "| interleaved | 10 |", // 2 keys × ceil(100 WCU/s × 0.05 s) items, all written
			"## 6. Chunks", "| chunk.Store | write |", "| chunk.Store | read |", "| plain loop | write |", "| plain loop | read |",
		}
		// The skew rows must be exactly what shard.Analyze says of the same ids.
		for _, f := range idFamilies {
			reps, err := shard.Analyze(f.ids(ids), shard.Hash(skewN), shard.CodePointProduct(skewN))
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range reps {
				want = append(want, fmt.Sprintf("| %s | %s | %d of %d | %.2f | %d | %.2f %% | %s |",
					f.name, []string{"Hash", "CodePointProduct"}[i], r.N-r.Unused, r.N, r.MaxMean, r.Hottest, 100*r.HotShare, r.Verdict))
			}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
		if strings.Contains(out, "not yet available") {
			t.Errorf("a scenario is missing:\n%s", out)
		}
		for _, name := range scenarioNames {
			if !strings.Contains(errOut, name) {
				t.Errorf("progress on stderr lacks %q:\n%s", name, errOut)
			}
		}

		md, err := os.ReadFile(filepath.Join(dir, "results.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range append(want, "![write throughput vs N against the N × cap line](writes.png)",
			"![scatter latency vs N against the sequential loop](reads.png)") {
			if !bytes.Contains(md, []byte(w)) {
				t.Errorf("results.md lacks %q", w)
			}
		}
		for _, name := range []string{"writes.png", "reads.png"} {
			checkPNG(t, filepath.Join(dir, name))
		}
	})
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("%s: %v pixels, want a real picture", path, b)
	}
}

// TestBenchPlots draws both plots in both formats from made-up results,
// without a server.
func TestBenchPlots(t *testing.T) {
	writes := []writeResult{
		{n: 1, rate: 99, limit: 100},
		{n: 2, sharded: true, rate: 198, limit: 200},
		{n: 8, sharded: true, rate: 700, limit: 800, cpu: cpuUse{machine: 1, machineKnown: true}},
	}
	reads := []readResult{
		{n: 8, sequential: 50 * time.Millisecond, scatter: 8 * time.Millisecond, unbounded: 8 * time.Millisecond, roundTrip: 6 * time.Millisecond},
		{n: 64, sequential: 400 * time.Millisecond, scatter: 20 * time.Millisecond, unbounded: 12 * time.Millisecond, roundTrip: 6 * time.Millisecond},
	}
	rep := &report{cfg: benchConfig{wcu: 100, rcu: 300, attempts: 3}, machine: readMachine(), server: "none", started: time.Now()}
	rep.sections = []*section{
		{number: 1, title: "w", plot: &plotSpec{file: "writes", alt: "w", draw: func() (*plot.Plot, error) { return writePlot(writes, 100) }}},
		{number: 2, title: "r", plot: &plotSpec{file: "reads", alt: "r", draw: func() (*plot.Plot, error) { return readPlot(reads, 5*time.Millisecond) }}},
	}
	for _, format := range []string{"png", "svg"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			if err := rep.write(dir, format); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"writes", "reads"} {
				path := filepath.Join(dir, name+"."+format)
				if format == "png" {
					checkPNG(t, path)
					continue
				}
				checkSVG(t, path)
			}
			md, err := os.ReadFile(filepath.Join(dir, "results.md"))
			if err != nil {
				t.Fatal(err)
			}
			if want := "(writes." + format + ")"; !bytes.Contains(md, []byte(want)) {
				t.Errorf("results.md lacks a link %q", want)
			}
		})
	}
}

// checkSVG checks that path is well-formed XML whose root is <svg>.
func checkSVG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q, want svg", path, root)
	}
}

func TestBenchFlags(t *testing.T) {
	quickDuration, err := time.ParseDuration(quickDefaults["duration"])
	if err != nil {
		t.Fatal(err)
	}
	quickN, err := intList("n", quickDefaults["n"])
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args     []string
		duration time.Duration
		ns       []int
		latency  time.Duration
	}{
		{[]string{"-quick"}, quickDuration, quickN, 5 * time.Millisecond},
		// Flags given explicitly win over -quick's values.
		{[]string{"-quick", "-n", "4, 16", "-latency", "2ms"}, quickDuration, []int{4, 16}, 2 * time.Millisecond},
		{[]string{"-duration", "7s", "-n", "3"}, 7 * time.Second, []int{3}, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		cfg, err := parseBench(tt.args, io.Discard)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if cfg.duration != tt.duration || cfg.latency != tt.latency {
			t.Errorf("%q: duration %v latency %v, want %v %v", tt.args, cfg.duration, cfg.latency, tt.duration, tt.latency)
		}
		if diff := cmp.Diff(tt.ns, cfg.writeNs); diff != "" {
			t.Errorf("%q: -n (-want +got):\n%s", tt.args, diff)
		}
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-server", "mysql"},
		{"-endpoint", "localhost:8000"},
		{"-scenarios", "7"},
		{"-scenarios", ""},
		{"-n", "0"},
		{"-n", "2,x"},
		{"-read-n", "10001"},
		{"-wcu", "-1"},
		{"-reps", "0"},
		{"-plot", "gif"},
		{"-duration", "0s"},
		{"extra"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2; stderr:\n%s", args, code, errOut)
		}
	}
}
