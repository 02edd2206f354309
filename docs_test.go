package dynashard_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
