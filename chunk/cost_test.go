package chunk

import (
	"os"
	"strings"
	"testing"
)

// TestCostTable: the cost tables of the package documentation and of the
// README are exactly what costTable computes from the store's own size
// rules. After a change to those rules, paste the table this test prints.
func TestCostTable(t *testing.T) {
	for _, tc := range []struct {
		file     string
		markdown bool
	}{{"doc.go", false}, {"../README.md", true}} {
		want, err := costTable(tc.markdown)
		if err != nil {
			t.Fatal(err)
		}
		text, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(text), want) {
			t.Errorf("%s does not hold the cost table as computed; it should read:\n%s", tc.file, want)
		}
	}
}

// TestCostArithmetic checks the figures the table is made of against
// DynamoDB's rules, independently of the table's text: units per 1 KB
// written and per 4 KB read (eventually consistent: half), requests as
// the limits allow.
func TestCostArithmetic(t *testing.T) {
	for n, want := range map[int]int64{0: 0, 1: 1, 1024: 1, 1025: 2, 409600: 400} {
		if got := writeUnits(n); got != want {
			t.Errorf("writeUnits(%d) = %d, want %d", n, got, want)
		}
	}
	for n, want := range map[int]float64{1: 0.5, 4096: 0.5, 4097: 1, 409600: 50} {
		if got := readUnits(n); got != want {
			t.Errorf("readUnits(%d) = %v, want %v", n, got, want)
		}
	}
	rows, err := costRows()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if !r.fits {
			if r.layout != "inline" || r.size <= 400_000 {
				t.Errorf("%d bytes %s: does not fit", r.size, r.layout)
			}
			continue
		}
		switch r.layout {
		case "inline", "chunks":
			// Every stored byte costs a unit per KB at least, and the
			// per-item overhead less than a unit per item.
			items := r.size/DefaultChunkSize + 2
			if r.wcu < r.size/1024 || r.wcu > r.size/1024+2*items {
				t.Errorf("%d bytes %s: %d write units", r.size, r.layout, r.wcu)
			}
			if r.rcu < float64(r.size)/8192 || r.rcu > float64(r.size)/8192+float64(items) {
				t.Errorf("%d bytes %s: %v read units", r.size, r.layout, r.rcu)
			}
		case "S3":
			if r.wcu != 1 || r.rcu != 0.5 {
				t.Errorf("%d bytes S3: parent %d write and %v read units, want 1 and 0.5", r.size, r.wcu, r.rcu)
			}
		}
		if r.layout == "chunks" {
			chunks := (r.size + DefaultChunkSize - 1) / DefaultChunkSize
			if w := r.write[1].n; w != (chunks+24)/25 {
				t.Errorf("%d bytes: %d BatchWriteItem for %d chunks", r.size, w, chunks)
			}
			if g := r.read[1].n; g < (chunks+39)/40 || g > (chunks+39)/40+2 {
				t.Errorf("%d bytes: %d BatchGetItem for %d chunks, 40 per request at most", r.size, g, chunks)
			}
		}
	}
}
