// Package axumbuild is a test helper: it builds the sample axum service of
// examples/axum-service, with planted-fault patches applied, through
// scripts/axum-build.sh.
//
// No crates registry is reachable here, so the script takes axum 0.7 and its
// dependencies from Debian's source crates (the librust-*-dev packages of
// trixie, fetched with a private apt state and unpacked, never installed) and
// builds offline with cargo. The crates are cached under
// $HOME/.cache/kavach/rust/registry and the builds under
// $HOME/.cache/kavach/axum (KAVACH_CACHE_DIR overrides $HOME/.cache/kavach),
// keyed by the toolchain, the crates, the service's files and the contents of
// the patches, in order. It needs cargo and rustc on PATH.
//
// Builds can take a minute: the first call on a machine downloads about 280
// packages (17 MB) and compiles about 50 crates, 15 seconds to a minute on
// two cores; each new set of patches then recompiles only the service, a few
// seconds. A cache hit returns in milliseconds. Tests calling it should allow
// for that and must not run with a short -timeout on a cold cache.
//
// The patches live in examples/axum-service/patches (see PatchDir).
package axumbuild

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
const script = "scripts/axum-build.sh"

// patchDir holds the service's patches, relative to the repository root.
const patchDir = "examples/axum-service/patches"

// Build returns the absolute path of an axum-service binary built from
// examples/axum-service with the given patch files applied in order (patch
// -p1 --fuzz=0 from the crate root; relative paths are taken from the working
// directory). It blocks while building: up to about a minute when the build
// is not cached. On failure the error holds the script's stderr, which says
// which patch did not apply or which cargo errors the build had.
func Build(patches ...string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	args := make([]string, 0, len(patches))
	for _, p := range patches {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("axumbuild: patch %s: %w", p, err)
		}
		args = append(args, abs)
	}
	cmd := exec.Command(filepath.Join(root, script), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("axumbuild: %s %s: %w\n%s", script, strings.Join(patches, " "), err, strings.TrimRight(stderr.String(), "\n"))
	}
	bin := strings.TrimSpace(stdout.String())
	if bin == "" || strings.Contains(bin, "\n") || !filepath.IsAbs(bin) {
		return "", fmt.Errorf("axumbuild: %s printed %q, not one absolute path\n%s", script, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("axumbuild: %s printed a path that does not exist: %w", script, err)
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
		t.Logf("axumbuild: built %s in %v", bin, d.Round(time.Millisecond))
	}
	return bin
}

// Patch returns the absolute path of one of the service's patches, by file
// name (e.g. "split-panics.patch"), in examples/axum-service/patches. It
// does not check that the file exists: Build does.
func Patch(name string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, patchDir, name), nil
}

// MustPatch is Patch for tests: it fails the test when the repository root
// is not found.
func MustPatch(t testing.TB, name string) string {
	t.Helper()
	p, err := Patch(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
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
	return "", fmt.Errorf("axumbuild: repository root not found: no directory with go.mod and %s above %s", script, strings.Join(starts, " or "))
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
