// Package buildscript runs the project's build scripts
// (scripts/redis-build.sh, scripts/axum-build.sh): each takes patch files,
// builds a service from source with them applied (cached under
// ~/.cache/kavach), and prints the absolute path of the build.
package buildscript

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Run runs script (a path relative to the repository root, or absolute)
// with the patches (relative paths are taken from the working directory)
// and returns the build's path. It blocks while building: up to a minute
// or so when the build is not cached. On failure the error holds the
// script's stderr, which says which patch did not apply or why the build
// failed.
func Run(script string, patches ...string) (string, error) {
	if !filepath.IsAbs(script) {
		root, err := RepoRoot(script)
		if err != nil {
			return "", err
		}
		script = filepath.Join(root, script)
	}
	name := filepath.Base(script)
	args := make([]string, 0, len(patches))
	for _, p := range patches {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("%s: patch %s: %w", name, p, err)
		}
		args = append(args, abs)
	}
	cmd := exec.Command(script, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", name, strings.Join(patches, " "), err, strings.TrimRight(stderr.String(), "\n"))
	}
	bin := strings.TrimSpace(stdout.String())
	if bin == "" || strings.Contains(bin, "\n") || !filepath.IsAbs(bin) {
		return "", fmt.Errorf("%s printed %q, not one absolute path\n%s", name, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s printed a path that does not exist: %w", name, err)
	}
	return bin, nil
}

// TB is the part of testing.TB that Must uses. It is an interface of its
// own so that this package, which the kavach command links (kavach
// grade), does not link the testing package into the shipped binary.
type TB interface {
	Helper()
	Fatal(args ...any)
	Logf(format string, args ...any)
}

// Must is Run for tests: it fails the test (it never skips) with the
// script's stderr when the build fails, and logs builds that took long.
func Must(t TB, script string, patches ...string) string {
	t.Helper()
	start := time.Now()
	bin, err := Run(script, patches...)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("%s: built %s in %v", filepath.Base(script), bin, d.Round(time.Millisecond))
	}
	return bin
}

// RepoRoot finds the repository root: the first directory holding go.mod
// and the given file, walking up from the working directory and then from
// this source file's directory.
func RepoRoot(file string) (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, src, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(src))
	}
	for _, dir := range starts {
		for {
			if isFile(filepath.Join(dir, "go.mod")) && isFile(filepath.Join(dir, file)) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("repository root not found: no directory with go.mod and %s above %s", file, strings.Join(starts, " or "))
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
