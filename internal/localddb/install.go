package localddb

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The pinned downloads. DynamoDB Local has no npm package of its own; the
// Amplify simulator ships version 1.25.1 of it in its emulator/ folder, and
// npm's registry is the only place this project may download from.
const (
	simulatorPackage   = "amplify-dynamodb-simulator@2.9.30"
	simulatorIntegrity = "sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ=="
	ddblocalDir        = "dynamodb-local-1.25.1"
)

// npm holds package.json and package-lock.json for dynalite; npm ci checks
// every tarball against the lockfile's integrity hashes.
//
//go:embed npm/package.json npm/package-lock.json npm/launch.js
var npmFiles embed.FS

// Paths says where the installed servers are.
type Paths struct {
	DynamoDBLocal string // folder holding DynamoDBLocal.jar and DynamoDBLocal_lib
	Dynalite      string // folder holding node_modules/dynalite and launch.js
}

// CacheDir is where servers are installed: $DYNASHARD_CACHE if set, else
// dynashard/ in the user's cache directory.
func CacheDir() (string, error) {
	if d := os.Getenv("DYNASHARD_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("localddb: no cache directory (set DYNASHARD_CACHE): %w", err)
	}
	return filepath.Join(d, "dynashard"), nil
}

// Install makes sure both servers are in the cache directory and returns
// where. It is idempotent and safe to run from several processes at once:
// each server is unpacked into a temporary folder and renamed into place,
// under a file lock, so a second run downloads nothing.
func Install(ctx context.Context, which ...Kind) (Paths, error) {
	root, err := CacheDir()
	if err != nil {
		return Paths{}, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Paths{}, fmt.Errorf("localddb: %w", err)
	}
	if len(which) == 0 {
		which = []Kind{DynamoDBLocal, Dynalite}
	}
	lockDir, err := dynaliteDirName()
	if err != nil {
		return Paths{}, err
	}
	p := Paths{
		DynamoDBLocal: filepath.Join(root, ddblocalDir),
		Dynalite:      filepath.Join(root, lockDir),
	}
	unlock, err := LockFile(filepath.Join(root, ".install.lock"))
	if err != nil {
		return Paths{}, err
	}
	defer unlock()
	for _, k := range which {
		switch k {
		case DynamoDBLocal:
			err = installOnce(p.DynamoDBLocal, func(tmp string) error { return installDynamoDBLocal(ctx, tmp) })
		case Dynalite:
			err = installOnce(p.Dynalite, func(tmp string) error { return installDynalite(ctx, tmp) })
		default:
			err = fmt.Errorf("localddb: cannot install server %q", k)
		}
		if err != nil {
			return Paths{}, err
		}
	}
	return p, nil
}

// dynaliteDirName names dynalite's folder after its lockfile, so a changed
// pin installs afresh instead of reusing a stale tree.
func dynaliteDirName() (string, error) {
	lock, err := npmFiles.ReadFile("npm/package-lock.json")
	if err != nil {
		return "", err
	}
	launch, err := npmFiles.ReadFile("npm/launch.js")
	if err != nil {
		return "", err
	}
	sum := sha512.Sum512(append(lock, launch...))
	return "dynalite-4.0.0-" + base64.RawURLEncoding.EncodeToString(sum[:6]), nil
}

func installOnce(dst string, fill func(tmp string) error) error {
	if _, err := os.Stat(filepath.Join(dst, ".complete")); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".tmp-"+filepath.Base(dst)+"-")
	if err != nil {
		return fmt.Errorf("localddb: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := fill(tmp); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return fmt.Errorf("localddb: %w", err)
	}
	// A half-installed folder from an interrupted older run is replaced.
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("localddb: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("localddb: %w", err)
	}
	return nil
}

func needTool(name, why string) error {
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("localddb: %s not found on PATH: install %s (needed for %s)", name, toolHint[name], why)
	}
	return nil
}

var toolHint = map[string]string{
	"npm":  "Node.js 20 with npm",
	"node": "Node.js 20",
	"java": "a Java 17 runtime (e.g. Debian's openjdk-17-jre-headless)",
}

func installDynamoDBLocal(ctx context.Context, tmp string) error {
	if err := needTool("npm", "downloading DynamoDB Local"); err != nil {
		return err
	}
	pack := filepath.Join(tmp, "pack")
	if err := os.Mkdir(pack, 0o755); err != nil {
		return fmt.Errorf("localddb: %w", err)
	}
	cmd := exec.CommandContext(ctx, "npm", "pack", simulatorPackage, "--pack-destination", pack, "--silent")
	cmd.Dir = pack
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("localddb: npm pack %s: %w\n%s", simulatorPackage, err, out)
	}
	tgzs, _ := filepath.Glob(filepath.Join(pack, "*.tgz"))
	if len(tgzs) != 1 {
		return fmt.Errorf("localddb: npm pack %s produced %d tarballs", simulatorPackage, len(tgzs))
	}
	if err := checkIntegrity(tgzs[0], simulatorIntegrity); err != nil {
		return err
	}
	if err := extract(tgzs[0], "package/emulator/", tmp); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(tmp, "DynamoDBLocal.jar")); err != nil {
		return fmt.Errorf("localddb: %s has no emulator/DynamoDBLocal.jar", simulatorPackage)
	}
	return os.RemoveAll(pack)
}

func checkIntegrity(file, want string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("localddb: %w", err)
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("localddb: %w", err)
	}
	got := "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil))
	if got != want {
		return fmt.Errorf("localddb: %s: integrity %s, want %s", filepath.Base(file), got, want)
	}
	return nil
}

// extract copies the regular files under prefix in the gzipped tarball to dst.
func extract(tgz, prefix, dst string) error {
	f, err := os.Open(tgz)
	if err != nil {
		return fmt.Errorf("localddb: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("localddb: %s: %w", tgz, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("localddb: %s: %w", tgz, err)
		}
		name, ok := strings.CutPrefix(h.Name, prefix)
		if !ok || h.Typeflag != tar.TypeReg || name == "" {
			continue
		}
		if !fs.ValidPath(name) {
			return fmt.Errorf("localddb: %s: unsafe path %q", tgz, h.Name)
		}
		out := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return fmt.Errorf("localddb: %w", err)
		}
		w, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("localddb: %w", err)
		}
		_, err = io.Copy(w, tr)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("localddb: %s: %w", out, err)
		}
	}
}

func installDynalite(ctx context.Context, tmp string) error {
	if err := needTool("npm", "installing dynalite"); err != nil {
		return err
	}
	for _, name := range []string{"package.json", "package-lock.json", "launch.js"} {
		b, err := npmFiles.ReadFile("npm/" + name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return fmt.Errorf("localddb: %w", err)
		}
	}
	// --ignore-scripts: dynalite's LevelDB binding ships prebuilt, and nothing
	// from the registry gets to run code at install time.
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--silent")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("localddb: npm ci (dynalite): %w\n%s", err, out)
	}
	return nil
}
