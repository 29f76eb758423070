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
// the patches, in order. Each key's binary is compiled from that key's
// sources: the script removes the service's artefacts from the shared cargo
// target directory and stamps the sources before each build, and fails
// unless cargo compiled the service. It needs cargo and rustc on PATH.
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
	"path/filepath"
	"testing"

	"github.com/kavach-dev/kavach/internal/buildscript"
	"github.com/kavach-dev/kavach/internal/reporoot"
)

// script is the build script, relative to the repository root.
const script = "scripts/axum-build.sh"

// Build returns the absolute path of a build made with the given patch
// files applied in order (relative paths are taken from the working
// directory). It blocks while building: up to about a minute when the
// build is not cached. On failure the error holds the script's stderr.
func Build(patches ...string) (string, error) {
	path, err := reporoot.Path(script)
	if err != nil {
		return "", err
	}
	return buildscript.Run(path, patches...)
}

// MustBuild is Build for tests: it fails the test (it never skips) with
// the script's stderr when the build fails.
func MustBuild(t testing.TB, patches ...string) string {
	t.Helper()
	path, err := reporoot.Path(script)
	if err != nil {
		t.Fatal(err)
	}
	return buildscript.Must(t, path, patches...)
}

// patchDir holds the service's patches, relative to the repository root.
const patchDir = "examples/axum-service/patches"

// Patch returns the absolute path of one of the service's patches, by file
// name (e.g. "split-panics.patch"), in examples/axum-service/patches. It
// does not check that the file exists: Build does.
func Patch(name string) (string, error) {
	root, err := reporoot.Find(script)
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
