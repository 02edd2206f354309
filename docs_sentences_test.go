package dynashard_test

import (
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// maxWordsPerSentence is the longest average sentence, in words, that a
// package doc or a README section may have. The docs of the libraries the
// house style follows (errgroup, aws-sdk-go-v2, guregu/dynamo, bbolt,
// go-cloud docstore) average 16-21 words per sentence.
const maxWordsPerSentence = 22

// TestDocSentenceLength: the package doc of every public package and
// command (s3blob and bench, modules of their own, included; an internal
// package only when it has a doc.go that explains its model), and every
// "## " section of README.md, average at most maxWordsPerSentence words
// per sentence. Code blocks, headings and tables are not prose and are
// skipped; a code span counts as one word; a list item ends a sentence.
// It logs every figure: the average and the 90th percentile. With
// DOC_SENTENCES_OVER=n in the environment it logs every sentence longer
// than n words too.
func TestDocSentenceLength(t *testing.T) {
	dirs, err := docDirs(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 12 {
		t.Fatalf("found %d package docs (%v): the walk misses packages", len(dirs), dirs)
	}
	for _, dir := range dirs {
		text, err := packageDoc(dir)
		if err != nil {
			t.Fatal(err)
		}
		if text == "" {
			t.Errorf("%s: no package doc", dir)
			continue
		}
		checkSentences(t, dir, docProse(text))
	}

	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := readmeSections(string(b))
	var all []string
	for _, s := range sections {
		all = append(all, s.prose...)
	}
	checkSentences(t, "README.md", all)
	for _, s := range sections {
		checkSentences(t, "README.md "+s.title, s.prose)
	}
}

// checkSentences logs the average and 90th percentile of the sentence
// lengths of prose (paragraphs and list items) and fails if the average
// is above maxWordsPerSentence.
func checkSentences(t *testing.T, name string, prose []string) {
	t.Helper()
	long, _ := strconv.Atoi(os.Getenv("DOC_SENTENCES_OVER"))
	var lengths []int
	for _, p := range prose {
		for _, s := range sentences(p) {
			n := len(words(s))
			if n == 0 {
				continue
			}
			lengths = append(lengths, n)
			if long > 0 && n > long {
				t.Logf("%s: %d words: %s", name, n, s)
			}
		}
	}
	if len(lengths) == 0 {
		return
	}
	total := 0
	for _, n := range lengths {
		total += n
	}
	avg := float64(total) / float64(len(lengths))
	slices.Sort(lengths)
	p90 := lengths[(len(lengths)*9+9)/10-1]
	t.Logf("%-36s %3d sentences, average %4.1f words, 90th percentile %3d, longest %3d", name, len(lengths), avg, p90, lengths[len(lengths)-1])
	if avg > maxWordsPerSentence {
		t.Errorf("%s: sentences average %.1f words, more than %d", name, avg, maxWordsPerSentence)
	}
}

// docDirs lists the directories under root whose package doc the test
// measures: every directory with a non-test Go file, except examples,
// tools (the release tooling), testdata, directories the go command
// ignores (starting with "." or "_"), and internal packages without a
// doc.go.
func docDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "examples" || name == "tools" || name == "node_modules") {
			return filepath.SkipDir
		}
		internal := slices.Contains(strings.Split(filepath.ToSlash(path), "/"), "internal")
		if internal {
			if _, err := os.Stat(filepath.Join(path, "doc.go")); err != nil {
				return nil
			}
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				dirs = append(dirs, path)
				break
			}
		}
		return nil
	})
	return dirs, err
}

// packageDoc returns the package doc of the non-test Go files in dir, as
// go/doc would show it.
func packageDoc(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	var docs []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return "", err
		}
		if af.Doc != nil {
			docs = append(docs, af.Doc.Text())
		}
	}
	return strings.Join(docs, "\n"), nil
}

// docProse returns the paragraphs and list items of a doc comment, as
// plain text, without its headings and code blocks.
func docProse(text string) []string {
	var p comment.Parser
	d := p.Parse(text)
	var out []string
	for _, b := range d.Content {
		switch b := b.(type) {
		case *comment.Paragraph:
			out = append(out, plainText(b.Text))
		case *comment.List:
			for _, item := range b.Items {
				for _, c := range item.Content {
					if para, ok := c.(*comment.Paragraph); ok {
						out = append(out, plainText(para.Text))
					}
				}
			}
		}
	}
	return out
}

func plainText(text []comment.Text) string {
	var b strings.Builder
	for _, t := range text {
		switch t := t.(type) {
		case comment.Plain:
			b.WriteString(string(t))
		case comment.Italic:
			b.WriteString(string(t))
		case *comment.Link:
			b.WriteString(plainText(t.Text))
		case *comment.DocLink:
			b.WriteString(plainText(t.Text))
		}
	}
	return b.String()
}

type readmeSection struct {
	title string
	prose []string
}

var (
	listMarker   = regexp.MustCompile(`^\s*([-*+]|\d+[.)])\s+`)
	readmeMarkup = regexp.MustCompile(`\*\*|__|!?\[([^\]]*)\]\([^)]*\)|<[^>]+>`)
)

// readmeSections splits README.md's prose by "## " heading into
// paragraphs and list items, without code blocks, tables, images,
// headings and HTML comments. Text before the first "## " is the section "(top)".
func readmeSections(md string) []readmeSection {
	sections := []readmeSection{{title: "(top)"}}
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			s := &sections[len(sections)-1]
			s.prose = append(s.prose, readmeMarkup.ReplaceAllString(strings.Join(cur, " "), "$1"))
			cur = nil
		}
	}
	fenced, htmlComment := false, false
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flush()
			fenced = !fenced
		case fenced:
		case htmlComment || strings.HasPrefix(trimmed, "<!--"):
			flush()
			htmlComment = !strings.Contains(trimmed, "-->")
		case trimmed == "", strings.HasPrefix(trimmed, "|"), strings.HasPrefix(trimmed, "!["):
			flush()
		case strings.HasPrefix(trimmed, "#"):
			flush()
			if strings.HasPrefix(trimmed, "## ") {
				sections = append(sections, readmeSection{title: strings.TrimPrefix(trimmed, "## ")})
			}
		case strings.HasPrefix(line, "    ") && len(cur) == 0:
			// An indented code block.
		case listMarker.MatchString(line):
			flush()
			cur = append(cur, listMarker.ReplaceAllString(line, ""))
		default:
			cur = append(cur, trimmed)
		}
	}
	flush()
	return sections
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	// abbrev ends with a period that never ends a sentence.
	abbrev = regexp.MustCompile(`(?i)(^|[\s(])(e\.g|i\.e|cf|vs|approx)\.$`)
)

// sentences splits a paragraph into sentences: a sentence ends with ".",
// "?" or "!" (and any closing quotes or brackets) before a space or the
// end of the paragraph, except after an abbreviation (e.g., i.e., cf.,
// vs.) and after "etc." when a lower-case word follows. A code span is
// one word and never ends a sentence.
func sentences(p string) []string {
	p = codeSpan.ReplaceAllString(p, "CODE")
	p = strings.Join(strings.Fields(p), " ")
	var out []string
	start := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '.' && c != '?' && c != '!' {
			continue
		}
		j := i + 1
		for j < len(p) && strings.ContainsRune(`)]"'”’`, rune(p[j])) {
			j++
		}
		if j < len(p) && p[j] != ' ' {
			continue
		}
		if c == '.' {
			head := p[start : i+1]
			if abbrev.MatchString(head) {
				continue
			}
			if strings.HasSuffix(head, "etc.") && j+1 < len(p) && unicode.IsLower(rune(p[j+1])) {
				continue
			}
		}
		out = append(out, strings.TrimSpace(p[start:j]))
		start = j
		i = j
	}
	if rest := strings.TrimSpace(p[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

// words returns the words of a sentence: the space-separated tokens with
// at least one letter or digit.
func words(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		if strings.IndexFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			out = append(out, f)
		}
	}
	return out
}

// TestSentences pins the splitter on the cases the docs have.
func TestSentences(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"One two. Three four.", []string{"One two.", "Three four."}},
		{"Use e.g. this, i.e. that. Next one.", []string{"Use e.g. this, i.e. that.", "Next one."}},
		{"Go 1.5 and v1.3.1 work: both. Yes!", []string{"Go 1.5 and v1.3.1 work: both.", "Yes!"}},
		{"Run `go test ./shard -run X. Y` now. Then?", []string{"Run CODE now.", "Then?"}},
		{"Files, logs etc. are kept. Logs etc. Then", []string{"Files, logs etc. are kept.", "Logs etc.", "Then"}},
		{"It says (see the guide.) Then it ends.", []string{"It says (see the guide.)", "Then it ends."}},
		{"A list item without a period", []string{"A list item without a period"}},
	} {
		got := sentences(tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("sentences(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := len(words("A — list, of 5 `x` words.")); got != 6 {
		t.Errorf("words: got %d, want 6", got)
	}
}

// TestRootDocNamesPackages: the root package doc gives every public
// package and command a list item that starts with its path ("shard:",
// "cmd/dynashard:"), and holds a glossary: a list under a "Glossary"
// heading.
func TestRootDocNamesPackages(t *testing.T) {
	dirs, err := docDirs(".")
	if err != nil {
		t.Fatal(err)
	}
	text, err := packageDoc(".")
	if err != nil {
		t.Fatal(err)
	}
	var p comment.Parser
	d := p.Parse(text)
	var items []string
	glossary, inGlossary := 0, false
	for _, b := range d.Content {
		if h, ok := b.(*comment.Heading); ok {
			inGlossary = plainText(h.Text) == "Glossary"
		}
		if l, ok := b.(*comment.List); ok {
			if inGlossary {
				glossary += len(l.Items)
			}
			for _, item := range l.Items {
				if len(item.Content) > 0 {
					if para, ok := item.Content[0].(*comment.Paragraph); ok {
						items = append(items, plainText(para.Text))
					}
				}
			}
		}
	}
	for _, dir := range dirs {
		dir = filepath.ToSlash(dir)
		if dir == "." || slices.Contains(strings.Split(dir, "/"), "internal") {
			continue
		}
		if !slices.ContainsFunc(items, func(s string) bool { return strings.HasPrefix(s, dir+":") }) {
			t.Errorf("the root package doc has no list item %q naming package %s", dir+": …", dir)
		}
	}
	if glossary == 0 {
		t.Error(`the root package doc has no glossary (a list under a "# Glossary" heading)`)
	}
}
