// Command releasecheck proves that dynashard's released modules resolve as
// a user's `go get` would, without this repository's replace directives.
//
// It does what RELEASING.md's procedure does, with a test version and a
// module proxy on the file system instead of tags and GitHub:
//
//  1. checks each released module: no import of another module's internal
//     packages (tests included), and every require of a sibling module
//     names a version, not the placeholder v0.0.0;
//  2. zips each module from the working tree at the test version, with its
//     sibling requires set to that version and its replace directives
//     dropped (the release commit's go.mod), into a file:// proxy;
//  3. in a new consumer module, with GOPROXY set to that proxy first and
//     no replace: go get s3blob (which must bring the root module with it),
//     checks `go list -m all`, runs the README's quick start against
//     dynashardtest, and `go install`s the CLI at the version and runs
//     `dynashard -version`.
//
// Modules the consumer also needs (the AWS SDK) come from the machine's
// module cache, used as a second file:// proxy, then from the machine's
// usual GOPROXY; their checksums come from the released modules' go.sum
// files, so the check needs the network only for what is not cached.
//
// Usage, from tools/: go run ./releasecheck -repo ..
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

// released are the module directories a release tags, relative to the
// repository root; bench/, examples/ and tools/ are in-repo modules only.
var released = []string{".", "s3blob"}

type mod struct {
	dir  string // absolute
	path string
	file *modfile.File
}

func main() {
	repo := flag.String("repo", "..", "the repository's root directory")
	version := flag.String("version", "v0.0.0-releasecheck", "the test version every module is tagged with")
	keep := flag.Bool("keep", false, "keep the proxy and consumer directories (printed) for inspection")
	flag.Parse()
	if err := run(*repo, *version, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
	fmt.Println("releasecheck: ok:", strings.Join(released, ", "), "at", *version)
}

func run(repo, version string, keep bool) error {
	if !semver.IsValid(version) {
		return fmt.Errorf("-version %q is not a semantic version", version)
	}
	root, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	var mods []mod
	for _, d := range released {
		m, err := readMod(filepath.Join(root, d))
		if err != nil {
			return err
		}
		mods = append(mods, m)
	}
	for _, m := range mods {
		if err := checkMod(m, mods); err != nil {
			return err
		}
	}
	work, err := os.MkdirTemp("", "releasecheck-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("releasecheck: working in", work)
	} else {
		defer os.RemoveAll(work)
	}
	proxy := filepath.Join(work, "proxy")
	for _, m := range mods {
		if err := publish(proxy, filepath.Join(work, "stage"), m, mods, version); err != nil {
			return fmt.Errorf("module %s: %w", m.path, err)
		}
	}
	return consume(work, proxy, mods, version)
}

func readMod(dir string) (mod, error) {
	name := filepath.Join(dir, "go.mod")
	b, err := os.ReadFile(name)
	if err != nil {
		return mod{}, err
	}
	f, err := modfile.Parse(name, b, nil)
	if err != nil {
		return mod{}, err
	}
	return mod{dir: dir, path: f.Module.Mod.Path, file: f}, nil
}

// checkMod refuses what would break a released module outside this
// repository: an import of a sibling's internal package (it compiles here,
// since the paths nest, and breaks whenever the sibling changes it) and a
// sibling require that names no release.
func checkMod(m mod, mods []mod) error {
	for _, r := range m.file.Require {
		if sibling(r.Mod.Path, mods) && (r.Mod.Version == "v0.0.0" || !semver.IsValid(r.Mod.Version)) {
			return fmt.Errorf("%s/go.mod: require %s %s names no release (RELEASING.md)", m.path, r.Mod.Path, r.Mod.Version)
		}
	}
	out, err := goCmd(m.dir, nil, "list", "-test", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if owner := ownerOf(imp, mods); owner != "" && owner != m.path && isInternal(imp) {
				return fmt.Errorf("%s (module %s) imports %s, an internal package of module %s", fields[0], m.path, imp, owner)
			}
		}
	}
	return nil
}

// ownerOf is the released module whose path is the longest prefix of pkg.
func ownerOf(pkg string, mods []mod) string {
	owner := ""
	for _, m := range mods {
		if (pkg == m.path || strings.HasPrefix(pkg, m.path+"/")) && len(m.path) > len(owner) {
			owner = m.path
		}
	}
	return owner
}

func sibling(path string, mods []mod) bool {
	for _, m := range mods {
		if m.path == path {
			return true
		}
	}
	return false
}

func isInternal(pkg string) bool {
	return strings.HasSuffix(pkg, "/internal") || strings.Contains(pkg, "/internal/")
}

// publish writes m at version into the file proxy: list, .info, .mod and
// .zip, the zip made from a copy of the module's files (those git tracks
// or would add) whose go.mod is the release's.
func publish(proxy, stage string, m mod, mods []mod, version string) error {
	gomod, err := releaseGoMod(m, mods, version)
	if err != nil {
		return err
	}
	src := filepath.Join(stage, filepath.Base(m.dir)+"@"+version)
	if err := copyTree(m.dir, src); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), gomod, 0o644); err != nil {
		return err
	}
	esc, err := module.EscapePath(m.path)
	if err != nil {
		return err
	}
	at := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(z, module.Version{Path: m.path, Version: version}, src); err != nil {
		z.Close()
		return err
	}
	if err := z.Close(); err != nil {
		return err
	}
	info, _ := json.Marshal(struct{ Version, Time string }{version, time.Now().UTC().Format(time.RFC3339)})
	for name, b := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod} {
		if err := os.WriteFile(filepath.Join(at, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// releaseGoMod is m's go.mod as the release commit has it: sibling
// requires at version, no replace of a sibling.
func releaseGoMod(m mod, mods []mod, version string) ([]byte, error) {
	f, err := modfile.Parse("go.mod", mustFormat(m.file), nil)
	if err != nil {
		return nil, err
	}
	for _, r := range m.file.Require {
		if sibling(r.Mod.Path, mods) {
			if err := f.AddRequire(r.Mod.Path, version); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range m.file.Replace {
		if sibling(r.Old.Path, mods) {
			if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return nil, err
			}
		}
	}
	f.Cleanup()
	return f.Format()
}

func mustFormat(f *modfile.File) []byte {
	b, err := f.Format()
	if err != nil {
		panic(err) // a file modfile.Parse accepted always formats
	}
	return b
}

// copyTree copies the files git tracks or would add under src (nested
// modules left out, as a module zip leaves them out) to dst.
func copyTree(src, dst string) error {
	out, err := run1(src, nil, "git", "ls-files", "-co", "--exclude-standard", "-z", ".")
	if err != nil {
		return err
	}
	nested := map[string]bool{}
	for _, name := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		if d := filepath.Dir(name); filepath.Base(name) == "go.mod" && d != "." {
			nested[d] = true
		}
	}
	for _, name := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		if name == "" || inNested(name, nested) {
			continue
		}
		fi, err := os.Lstat(filepath.Join(src, name))
		if err != nil {
			if os.IsNotExist(err) { // deleted in the work tree, not yet in git
				continue
			}
			return err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(to, b, fi.Mode().Perm()|0o200); err != nil {
			return err
		}
	}
	return nil
}

func inNested(name string, nested map[string]bool) bool {
	for d := filepath.Dir(name); d != "." && d != "/"; d = filepath.Dir(d) {
		if nested[d] {
			return true
		}
	}
	return false
}

// consume builds a consumer module the way a user would: go get from the
// proxy, no replace.
func consume(work, proxy string, mods []mod, version string) error {
	dir := filepath.Join(work, "consumer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The released modules' go.sum lines were checked when they were
	// added; the consumer starts from them so that no sum database is
	// asked about the SDK. The dynashard modules have no line: GONOSUMDB.
	var sums bytes.Buffer
	for _, m := range mods {
		b, err := os.ReadFile(filepath.Join(m.dir, "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		sums.Write(b)
	}
	goVersion := mods[0].file.Go.Version
	files := map[string]string{
		"go.mod":             "module example.com/consumer\n\ngo " + goVersion + "\n",
		"go.sum":             sums.String(),
		"quickstart_test.go": quickStart,
		"s3.go":              s3Use,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	cache, err := goCmd(dir, nil, "env", "GOMODCACHE", "GOPROXY")
	if err != nil {
		return err
	}
	machineCache, machineProxy, _ := strings.Cut(strings.TrimSpace(cache), "\n")
	env := []string{
		"GOPROXY=" + fileURL(proxy) + "," + fileURL(filepath.Join(machineCache, "cache", "download")) + "," + machineProxy,
		// A cache of its own: the machine's would keep an earlier run's
		// zip of the same test version.
		"GOMODCACHE=" + filepath.Join(work, "modcache"),
		"GONOSUMDB=github.com/dynashard",
		"GOPRIVATE=", "GONOPROXY=",
		"GOFLAGS=-mod=mod -modcacherw",
		"GOWORK=off",
		"GOBIN=" + filepath.Join(work, "bin"),
	}
	steps := [][]string{
		{"get", mods[1].path + "@" + version}, // s3blob alone brings the root at its version
		{"get", mods[0].path + "@" + version},
		{"mod", "tidy"},
		{"vet", "./..."},
		{"test", "-count=1", "./..."},
		{"install", mods[0].path + "/cmd/dynashard@" + version},
	}
	for _, s := range steps {
		if _, err := goCmd(dir, env, s...); err != nil {
			return err
		}
	}
	list, err := goCmd(dir, env, "list", "-m", "all")
	if err != nil {
		return err
	}
	for _, m := range mods {
		if !strings.Contains("\n"+list, "\n"+m.path+" "+version+"\n") {
			return fmt.Errorf("go list -m all in the consumer does not show %s %s:\n%s", m.path, version, list)
		}
	}
	out, err := run1(dir, env, filepath.Join(work, "bin", "dynashard"), "-version")
	if err != nil {
		return err
	}
	if !strings.Contains(out, version) {
		return fmt.Errorf("dynashard -version printed %q, want %s", strings.TrimSpace(out), version)
	}
	return nil
}

func fileURL(dir string) string { return "file://" + filepath.ToSlash(dir) }

func goCmd(dir string, env []string, args ...string) (string, error) {
	return run1(dir, env, "go", args...)
}

func run1(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s (in %s): %w\n%s%s", name, strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}
