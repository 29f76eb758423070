// Package redisbuild is a test helper: it builds Redis from source, with
// planted-fault patches applied, through scripts/redis-build.sh.
//
// The script builds redis-server from the Debian source package of the
// system's release (bookworm: 5:7.0.15-1~deb12u*) with MALLOC=libc, so the
// binary also runs under libfaketime, unlike Debian's packaged server. Builds
// are cached under $HOME/.cache/kavach/redis (KAVACH_CACHE_DIR overrides
// $HOME/.cache/kavach), keyed by the source version and the contents of the
// patches, in order.
//
// Builds can take a minute: the first call on a machine downloads the source
// package (a few MB, with a private apt state) and compiles it, about 20-40
// seconds on two cores; each new set of patches compiles again. A cache hit
// returns in milliseconds. Tests calling it should allow for that and must
// not run with a short -timeout on a cold cache.
package redisbuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// script is the build script, relative to the repository root.
const script = "scripts/redis-build.sh"

// Build returns the absolute path of a redis-server binary built from the
// Debian source with the given patch files applied in order (patch -p1 from
// the top of the source tree; relative paths are taken from the working
// directory). It blocks while building: up to about a minute when the build
// is not cached. On failure the error holds the script's stderr, which says
// which patch did not apply or where the build log is.
func Build(patches ...string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	args := make([]string, 0, len(patches))
	for _, p := range patches {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("redisbuild: patch %s: %w", p, err)
		}
		args = append(args, abs)
	}
	cmd := exec.Command(filepath.Join(root, script), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("redisbuild: %s %s: %w\n%s", script, strings.Join(patches, " "), err, strings.TrimRight(stderr.String(), "\n"))
	}
	bin := strings.TrimSpace(stdout.String())
	if bin == "" || strings.Contains(bin, "\n") || !filepath.IsAbs(bin) {
		return "", fmt.Errorf("redisbuild: %s printed %q, not one absolute path\n%s", script, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("redisbuild: %s printed a path that does not exist: %w", script, err)
	}
	return bin, nil
}

// MustBuild is Build for tests: it fails the test (it never skips) with the
// script's stderr when the build fails. It can take a minute when the build
// is not cached.
func MustBuild(t testing.TB, patches ...string) string {
	t.Helper()
	start := time.Now()
	bin, err := Build(patches...)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("redisbuild: built %s in %v", bin, d.Round(time.Millisecond))
	}
	return bin
}

// repoRoot finds the repository root: the first directory holding go.mod
// and the script, walking up from the working directory and then from this
// source file's directory.
func repoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for {
			if isFile(filepath.Join(dir, "go.mod")) && isFile(filepath.Join(dir, script)) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("redisbuild: repository root not found: no directory with go.mod and %s above %s", script, strings.Join(starts, " or "))
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
