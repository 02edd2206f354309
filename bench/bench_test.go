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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot"

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/internal/skew"
	"github.com/dynashard/dynashard/partition"
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
			"-part-n", "2",
			"-split-reads", "3",
			"-cost-rounds", "1", "-cost-ops", "3", "-cost-mib", "1",
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
			"## 7. Hot-day writes on a provisioned table (partition model)",
			"## 8. Online resharding", "| fixed N | [2] |", "| auto-grow |",
			"## 9. One item over three tables (package split)", "| price update, WCU | 3 (UpdateItem) | 1 |",
			"## 10. The client's own cost", "| Put, per call | Table.Put |",
		}
		// The skew rows must be exactly what the skew analysis says of the same ids.
		for _, f := range idFamilies {
			reps, err := skew.Analyze(f.ids(ids), shard.Hash(skewN), shard.CodePointProduct(skewN))
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
		for _, name := range []string{"writes.png", "reads.png", "writes_partitions.png"} {
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

// TestBenchPlots draws every plot in both formats from made-up results,
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
	parts := []partResult{
		{n: 1, keys: []int{0, 1, 0, 0}, rate: 100, limit: 400, bound: 100, even: 100},
		{n: 4, sharded: true, keys: []int{2, 1, 0, 1}, rate: 290, limit: 400, bound: 300, even: 200},
		{n: 200, sharded: true, keys: []int{49, 52, 48, 51}, rate: 395, limit: 400, bound: 400, even: 385},
	}
	rep := &report{cfg: benchConfig{wcu: 100, rcu: 300, attempts: 3}, machine: readMachine(), server: "none", started: time.Now()}
	rep.sections = []*section{
		{number: 1, title: "w", plot: &plotSpec{file: "writes", alt: "w", draw: func() (*plot.Plot, error) { return writePlot(writes, 100) }}},
		{number: 2, title: "r", plot: &plotSpec{file: "reads", alt: "r", draw: func() (*plot.Plot, error) { return readPlot(reads, 5*time.Millisecond) }}},
		{number: 7, title: "p", plot: &plotSpec{file: "writes_partitions", alt: "p", draw: func() (*plot.Plot, error) { return partPlot(parts, 400) }}},
	}
	for _, format := range []string{"png", "svg"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			if err := rep.write(dir, format); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"writes", "reads", "writes_partitions"} {
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
		{"-scenarios", "11"},
		{"-cost-ops", "0"},
		{"-part-n", "0"},
		{"-part-wcu", "0"},
		{"-part-scale", "-1"},
		{"-part-writers", "0"},
		{"-part-burst", "-1s"},
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

// TestBenchPartitions runs scenario 7 in quick mode (shorter steps) on a
// table of 2,000 WCU at time scale 0.1 and checks its rows: one per
// quick shard count and the unsharded baseline, the limit the table's WCU
// per real second in every row, the keys placed on partitions as package
// partition places them, and the plot written.
func TestBenchPartitions(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		dir := t.TempDir()
		code, out, errOut := runCLI(t, "-quick", "-endpoint", s.Endpoint, "-scenarios", "7",
			"-part-wcu", "2000", "-part-scale", "0.1", "-duration", "400ms", "-warmup", "200ms", "-out", dir)
		if code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
		quickN, err := intList("part-n", quickDefaults["part-n"])
		if err != nil {
			t.Fatal(err)
		}
		rows := sectionRows(t, out, "## 7. ")
		if len(rows) != 1+len(quickN) {
			t.Fatalf("%d rows, want %d (unsharded and N = %v):\n%s", len(rows), 1+len(quickN), quickN, out)
		}
		layout, err := partition.NewLayout(0, 2000, 0)
		if err != nil {
			t.Fatal(err)
		}
		const limit = "200" // 2,000 WCU at time scale 0.1
		for i, row := range rows {
			n, sharded := 1, i > 0
			if sharded {
				n = quickN[i-1]
			}
			keys := []string{fmt.Sprintf("pday%d", i)}
			if sharded {
				keys = slices.Collect(shard.Keys(keys[0], n))
			}
			counts := make([]string, layout.Len())
			perPart := make([]int, layout.Len())
			for _, k := range keys {
				h, err := partition.KeyHash(&types.AttributeValueMemberS{Value: k})
				if err != nil {
					t.Fatal(err)
				}
				perPart[layout.Find(h)]++
			}
			for j, c := range perPart {
				counts[j] = fmt.Sprint(c)
			}
			want := map[string]string{
				"keys": map[bool]string{false: "unsharded", true: "sharded"}[sharded], "N": fmt.Sprint(n),
				"limit: table WCU": limit, "keys per partition": strings.Join(counts, " / "),
			}
			for col, w := range want {
				if row[col] != w {
					t.Errorf("row %d: %s = %q, want %q", i, col, row[col], w)
				}
			}
			if got := strings.Count(row["items/s per partition"], "/"); got != layout.Len()-1 {
				t.Errorf("row %d: items/s per partition %q, want %d figures", i, row["items/s per partition"], layout.Len())
			}
		}
		checkPNG(t, filepath.Join(dir, "writes_partitions.png"))
	})
	if pts := partLimitLine(1, 200, 400); len(pts) < 2 || pts[0].Y != 400 || pts[len(pts)-1].Y != 400 || pts[len(pts)-1].X != 200 {
		t.Errorf("partLimitLine(1, 200, 400) = %v, want flat at 400 from 1 to 200", pts)
	}
}

// sectionRows returns the rows of the first table after the heading that
// starts with prefix, as column name → cell.
func sectionRows(t *testing.T, md, prefix string) []map[string]string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "\n"+prefix)
	if !ok {
		t.Fatalf("no section %q in:\n%s", prefix, md)
	}
	var header []string
	var rows []map[string]string
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if header != nil {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], "---"):
		default:
			row := map[string]string{}
			for i, c := range cells {
				row[header[i]] = c
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// TestBenchSplit runs scenario 9 against each test server and checks its
// capacity figures, which the servers report exactly: the guide's 3 vs 1
// WCU for a price update, 0.5 RCU for a basic page view either way. The
// latencies are only checked to be there.
func TestBenchSplit(t *testing.T) {
	whole, err := attributevalue.MarshalMap(benchProduct())
	if err != nil {
		t.Fatal(err)
	}
	wholeSize, _ := ddbsize.ItemSize(whole)
	l := splitLayout("c", "a", "e")
	availSize, _ := ddbsize.ItemSize(partItem(whole, l.Parts[1]))
	if wholeSize <= 2048 || wholeSize > 3072 || availSize < 250 || availSize > 350 {
		t.Fatalf("product of %d bytes with an availability part of %d, want 2049..3072 (3 KB) and about 300", wholeSize, availSize)
	}
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		code, out, errOut := runCLI(t, "-endpoint", s.Endpoint, "-scenarios", "9", "-split-reads", "5")
		if code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
		create := []string{"3 (PutItem)", "n/a (no transactions)", "n/a"}
		want := map[string][]string{ // operation → one table, split, split by table
			"price update, WCU":              {"3 (UpdateItem)", "1", "availability 1"},
			"basic page view, RCU":           {"0.5 (GetItem of Title, Description)", "0.5", "catalog 0.5"},
			"basic + availability view, RCU": {"0.5 (GetItem)", "1", "catalog 0.5, availability 0.5"},
		}
		rows := sectionRows(t, out, "## 9. ")
		if len(rows) != 4 {
			t.Fatalf("%d rows, want 4:\n%s", len(rows), out)
		}
		for _, row := range rows {
			got := []string{row["one table"], row["split"], row["split, by table"]}
			w, ok := want[row["operation"]]
			if row["operation"] == "create, WCU" {
				if s.Kind == localddb.Dynalite {
					w, ok = create, true
				} else {
					// DynamoDB Local reports a transaction's units at its
					// own rate (see package split); each part pays some.
					w, ok = []string{create[0], got[1], got[2]}, strings.HasSuffix(got[1], " (TransactWriteItems)") &&
						strings.Count(got[2], ",") == 2
				}
			}
			if !ok || !cmp.Equal(w, got) {
				t.Errorf("row %q: got %q, want %q", row["operation"], got, w)
			}
		}
		for _, w := range []string{"| GetItem of the whole item, one table (baseline) | 1 GetItem |", " | 1.00× |",
			"| split.Get: basic + availability parts | 1 BatchGetItem, 2 tables |", "the guide's figures"} {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	})
}
