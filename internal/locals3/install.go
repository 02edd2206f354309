package locals3

import (
	"context"
	"crypto/sha512"
	"embed"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/dynashard/dynashard/internal/localddb"
)

// npm holds package.json and package-lock.json for s3rver; npm ci checks
// every tarball against the lockfile's integrity hashes.
//
//go:embed npm/package.json npm/package-lock.json npm/launch.js
var npmFiles embed.FS

// Install makes sure s3rver is in the cache directory (localddb.CacheDir)
// and returns the folder holding node_modules/s3rver and launch.js. It is
// idempotent and safe to run from several processes at once: the tree is
// installed into a temporary folder and renamed into place under a file
// lock, so a second run downloads nothing.
func Install(ctx context.Context) (string, error) {
	root, err := localddb.CacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("locals3: %w", err)
	}
	name, err := dirName()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(root, name)
	if _, err := os.Stat(filepath.Join(dst, ".complete")); err == nil {
		return dst, nil
	}
	unlock, err := localddb.LockFile(filepath.Join(root, ".install-s3.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dst, ".complete")); err == nil {
		return dst, nil
	}
	tmp, err := os.MkdirTemp(root, ".tmp-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("locals3: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := installS3rver(ctx, tmp); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", fmt.Errorf("locals3: %w", err)
	}
	// A half-installed folder from an interrupted older run is replaced.
	if err := os.RemoveAll(dst); err != nil {
		return "", fmt.Errorf("locals3: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", fmt.Errorf("locals3: %w", err)
	}
	return dst, nil
}

// dirName names the install folder after the lockfile and launcher, so a
// changed pin installs afresh instead of reusing a stale tree.
func dirName() (string, error) {
	var all []byte
	for _, name := range []string{"npm/package-lock.json", "npm/launch.js"} {
		b, err := npmFiles.ReadFile(name)
		if err != nil {
			return "", err
		}
		all = append(all, b...)
	}
	sum := sha512.Sum512(all)
	return "s3rver-" + Version + "-" + base64.RawURLEncoding.EncodeToString(sum[:6]), nil
}

func installS3rver(ctx context.Context, tmp string) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("locals3: npm not found on PATH: install Node.js 20 with npm (needed for s3rver)")
	}
	for _, name := range []string{"package.json", "package-lock.json", "launch.js"} {
		b, err := npmFiles.ReadFile("npm/" + name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return fmt.Errorf("locals3: %w", err)
		}
	}
	// --ignore-scripts: nothing from the registry gets to run code at
	// install time (s3rver and its dependencies are plain JavaScript).
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--silent")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("locals3: npm ci (s3rver): %w\n%s", err, out)
	}
	return nil
}
