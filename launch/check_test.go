package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckExecutable(t *testing.T) {
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (make test installs it): %v", err)
	}
	markers := []string{"redis_version:", "valkey_version:"}
	if err := CheckExecutable(redis, "a Redis server", markers, nil); err != nil {
		t.Errorf("redis-server as a Redis server: %v", err)
	}
	if err := CheckExecutable(redis, "an HTTP service", nil, markers); err == nil || !strings.Contains(err.Error(), `it holds "redis_version"`) {
		t.Errorf("redis-server as an HTTP service: %v, want refused", err)
	}
	if err := CheckExecutable("/bin/true", "a Redis server", markers, nil); err == nil || !strings.Contains(err.Error(), "is not a Redis server") {
		t.Errorf("/bin/true as a Redis server: %v, want refused", err)
	}
	// A marker cut across the reader's chunks is still found.
	big := filepath.Join(t.TempDir(), "big")
	data := append([]byte("\x7fELF"), make([]byte, 1<<20-8)...)
	data = append(data, "redis_version:7"...)
	if err := os.WriteFile(big, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckExecutable(big, "a Redis server", markers, nil); err != nil {
		t.Errorf("marker across chunks: %v", err)
	}
	// Scripts and unreadable paths pass: starting them says what they are.
	script := filepath.Join(t.TempDir(), "build.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nexec redis-server \"$@\"\n"), 0o755)
	for _, p := range []string{script, "/no/such/build"} {
		if err := CheckExecutable(p, "a Redis server", markers, nil); err != nil {
			t.Errorf("%s: %v, want passed", p, err)
		}
	}
}

// TestHoldsJemalloc: Debian's server (linked with the system's jemalloc)
// has the mark; Kavach's test build (MALLOC=libc) and a script do not.
func TestHoldsJemalloc(t *testing.T) {
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil && !Holds("/usr/bin/redis-server", Jemalloc...) {
		t.Error("/usr/bin/redis-server: no jemalloc mark found")
	}
	script := filepath.Join(t.TempDir(), "build.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n# uses jemalloc somewhere\nexec sleep 100\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if Holds(script, Jemalloc...) {
		t.Error("a script that names jemalloc in a comment has the mark")
	}
}
