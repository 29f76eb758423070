// Package redisbuild is a test helper: it builds Redis from source, with
// planted-fault patches applied, through scripts/redis-build.sh.
//
// The script builds redis-server from the Debian source package of the
// system's release (bookworm: 5:7.0.15-1~deb12u*) with MALLOC=libc (the
// quickest build; KAVACH_REDIS_MALLOC=jemalloc makes it a plain make with
// the bundled jemalloc). Builds
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
	"testing"

	"github.com/kavach-dev/kavach/internal/buildscript"
	"github.com/kavach-dev/kavach/internal/reporoot"
)

// script is the build script, relative to the repository root.
const script = "scripts/redis-build.sh"

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
