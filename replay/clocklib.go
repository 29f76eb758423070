package replay

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// clockSource is the clock library's source, compiled on this machine by
// ClockLibrary.
//
//go:embed clocklib/kavachclock.c
var clockSource []byte

// clockFlags are the compiler's flags for the library.
var clockFlags = []string{"-O2", "-Wall", "-fPIC", "-shared", "-fvisibility=hidden"}

// ClockLibrary is the path of the clock library (clocklib/kavachclock.c),
// built with the system's C compiler (cc) on first use and cached under
// $KAVACH_CACHE_DIR (default $HOME/.cache/kavach), named by a hash of its
// source and flags: a new version of Kavach builds its own, and many
// processes building it at once each rename a whole file into place.
// KAVACH_CLOCK_LIB names a library built elsewhere. scripts/deps.sh builds
// it ahead (go run ./internal/clockbuild).
func ClockLibrary() (string, error) { return clockLibrary() }

var clockLibrary = sync.OnceValues(func() (string, error) {
	if lib := os.Getenv("KAVACH_CLOCK_LIB"); lib != "" {
		if _, err := os.Stat(lib); err != nil {
			return "", fmt.Errorf("clock library: KAVACH_CLOCK_LIB: %w", err)
		}
		return lib, nil
	}
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(clockSource)
	h.Write([]byte(fmt.Sprint(clockFlags)))
	lib := filepath.Join(dir, "libkavachclock-"+hex.EncodeToString(h.Sum(nil))[:16]+".so")
	if _, err := os.Stat(lib); err == nil {
		return lib, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("clock library: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", fmt.Errorf("clock library: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "kavachclock.c")
	if err := os.WriteFile(src, clockSource, 0o644); err != nil {
		return "", fmt.Errorf("clock library: %w", err)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", fmt.Errorf("clock library: no C compiler (cc) to build it with: apt-get install gcc libc6-dev, or run scripts/deps.sh")
	}
	out := filepath.Join(tmp, "lib.so")
	var stderr bytes.Buffer
	cmd := exec.Command(cc, append(append([]string(nil), clockFlags...), "-o", out, src)...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("clock library: %s failed: %v\n%s", cc, err, stderr.Bytes())
	}
	if err := os.Rename(out, lib); err != nil {
		return "", fmt.Errorf("clock library: %w", err)
	}
	return lib, nil
})

// cacheDir is where the library is kept.
func cacheDir() (string, error) {
	if d := os.Getenv("KAVACH_CACHE_DIR"); d != "" {
		return filepath.Join(d, "clock"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		// A directory of this user's own, never a shared one: a library
		// found there is preloaded into builds.
		return filepath.Join(os.TempDir(), fmt.Sprintf("kavach-cache-%d", os.Getuid()), "clock"), nil
	}
	return filepath.Join(home, ".cache", "kavach", "clock"), nil
}
