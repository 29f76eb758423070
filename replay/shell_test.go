package replay

import (
	"io"
	"os/exec"
	"testing"
	"time"
)

// startShell starts sh -c script with a pipe to its standard input, and
// kills its tree when the test ends.
func startShell(t *testing.T, script string) (*exec.Cmd, io.Writer) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range (watch{pid: cmd.Process.Pid}).tree()[1:] {
			exec.Command("kill", "-9", itoa(pid)).Run()
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, in
}

// waitFor polls cond; the bound is only against a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("never %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
