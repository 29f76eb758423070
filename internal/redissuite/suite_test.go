package redissuite

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// units is the smaller set make test runs (the script's default, all
// thirteen, is make redis-suite): units whose tests do not time the
// machine, so that a loaded CI machine fails none of them directly.
var units = []string{"unit/type/incr", "unit/keyspace", "unit/multi", "unit/type/hash"}

// TestRedisSuite runs the units through the recorder and replays the
// fixture on the same build: every test passes through the recorder, and
// the replay reproduces the recording with nothing different or not run
// and noise at most 0.2 % of the steps (the script's exit status says so;
// its summary is logged).
func TestRedisSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Redis's own test suite")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kavach")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kavach")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", "redis-suite.sh")}, units...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KAVACH="+bin, "TMPDIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("redis-suite.sh %s:\n%s", strings.Join(units, " "), stdout.String())
	if err != nil {
		t.Fatalf("redis-suite.sh: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"\nsteps ", " 0 different, 0 not-run", "\nresult     reproduced", " 0 failed "} {
		if !strings.Contains("\n"+stdout.String(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}
