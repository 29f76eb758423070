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
	"strings"
	"time"
)

// Run runs script (a path, absolute or relative to the working
// directory: an example's is relative to its folder, which the caller
// joins) with the patches (relative paths are taken from the working
// directory) and returns the build's path. Nothing is found from where
// Kavach was compiled: it works from an installed binary. It blocks while building: up to a minute
// or so when the build is not cached. On failure the error holds the
// script's stderr, which says which patch did not apply or why the build
// failed.
func Run(script string, patches ...string) (string, error) {
	script, err := filepath.Abs(script)
	if err != nil {
		return "", err
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
