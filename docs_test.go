package dynashard_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dynashard/dynashard/shard"
)

// TestDocsCiteExistingFiles: every Markdown file that a Go source or a
// Markdown document of the repository names exists in it, so that no
// comment sends a reader to a document that is not there.
func TestDocsCiteExistingFiles(t *testing.T) {
	have := map[string]bool{}
	var docs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		have[d.Name()] = true
		if ext := filepath.Ext(path); ext == ".go" || ext == ".md" {
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cited := regexp.MustCompile(`[A-Za-z0-9_-]+\.md\b`)
	for _, path := range docs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range cited.FindAllString(string(b), -1) {
			if !have[name] {
				t.Errorf("%s cites %s, which the repository does not have", path, name)
			}
		}
	}
}

// TestReadmeTestCommandsRunTests: every "go test ./pkg -run Pattern" the
// README gives runs at least one test: pkg has a Test function whose name
// the pattern matches.
func TestReadmeTestCommandsRunTests(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := regexp.MustCompile("go test (\\./[A-Za-z0-9_/.-]+) -run ([^`;\\s]+)").FindAllStringSubmatch(string(b), -1)
	if len(cmds) == 0 {
		t.Fatal("the README gives no go test -run command: the test tests nothing")
	}
	testFunc := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	for _, c := range cmds {
		dir, run := c[1], regexp.MustCompile(c[2])
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		var matched []string
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
				if run.MatchString(m[1]) {
					matched = append(matched, m[1])
				}
			}
		}
		if len(matched) == 0 {
			t.Errorf("README: %q runs no test: %s has no Test function matching %q", c[0], dir, c[2])
		}
	}
}

// TestReadmeHottestSuffix: the README's row on 200,000 sequential ORD-
// ids at N = 200 gives each strategy's hottest suffix and its share, as
// the strategies place the ids.
func TestReadmeHottestSuffix(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| the hottest suffix's share of 200,000 sequential `ORD-` ids.*$").FindString(string(b))
	if row == "" {
		t.Fatal("README: no row on the hottest suffix's share of 200,000 sequential ORD- ids")
	}
	for _, s := range []shard.Strategy{shard.CodePointProduct(200), shard.Hash(200)} {
		counts := make([]int, s.N()+1)
		for i := range 200_000 {
			counts[s.Pick(fmt.Sprintf("ORD-%08d", i+1))]++
		}
		hot := 1
		for suffix, n := range counts {
			if n > counts[hot] {
				hot = suffix
			}
		}
		share := 100 * float64(counts[hot]) / 200_000
		text := strconv.FormatFloat(share, 'f', 2, 64)
		if share >= 10 {
			text = strconv.FormatFloat(share, 'f', 0, 64)
		}
		for _, want := range []string{fmt.Sprintf("(suffix %d)", hot), text + " %"} {
			if !strings.Contains(row, want) {
				t.Errorf("README row %q lacks %q (%v: hottest suffix %d, %.2f %% of the ids)", row, want, s, hot, share)
			}
		}
	}
}
