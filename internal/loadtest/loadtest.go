// Package loadtest holds what the tests that grade or replay again and
// again beside a saturated machine share: the load (stress-ng on every
// core) and how many times to repeat.
//
// `make test` runs each such test a few times (Runs' short form), so that
// the suite has headroom on a loaded 2-core machine; `make test-load`
// (KAVACH_LOAD=full) runs the full count each test names.
package loadtest

import (
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Env is the environment variable that selects the full count: "full".
const Env = "KAVACH_LOAD"

// Runs is how many times a test repeats what it checks under load: full
// with KAVACH_LOAD=full, else a fifth of it, at least 2 (and never more
// than full).
func Runs(full int) int {
	if os.Getenv(Env) == "full" {
		return full
	}
	return min(full, max(2, (full+4)/5))
}

// Stress saturates every core with stress-ng until the returned stop is
// called or the test ends. A missing stress-ng fails the test: the
// README's test command installs it.
func Stress(t testing.TB) (stop func()) {
	t.Helper()
	path, err := exec.LookPath("stress-ng")
	if err != nil {
		t.Fatal("stress-ng is not installed: the README's test command installs it (scripts/deps.sh)")
	}
	cmd := exec.Command(path, "--cpu", "0", "--timeout", "600s", "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
	t.Cleanup(stop)
	time.Sleep(200 * time.Millisecond) // the workers are running
	return stop
}
