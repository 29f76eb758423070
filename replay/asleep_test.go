package replay

import (
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
)

// TestAsleep: asleep says what the kernel says of every thread of the
// tree: a shell blocked on a read is asleep; once it has started a child
// that spins, it is not.
func TestAsleep(t *testing.T) {
	cmd, in := startShell(t, "read x; (while :; do :; done) & read y")
	w := watch{pid: cmd.Process.Pid}
	waitFor(t, "blocked on its read", func() bool { a, _ := w.asleep(); return a })
	if asleep, ok := w.asleep(); !asleep || !ok {
		t.Fatalf("asleep of a shell blocked on a read: %v, ok %v", asleep, ok)
	}
	io.WriteString(in, "go\n")
	waitFor(t, "started its child", func() bool { return len(w.tree()) > 1 })
	for range 3 {
		if asleep, ok := w.asleep(); asleep || !ok {
			t.Fatalf("asleep of a tree with a spinning child: %v, ok %v", asleep, ok)
		}
	}
	if asleep, ok := (watch{pid: 1 << 30}).asleep(); asleep || ok {
		t.Fatalf("asleep of no process: %v, ok %v", asleep, ok)
	}
}

// TestTurnAfterAsleep: a settled move waits for one whole turn of the
// build's loop after it. A build seen blocked after the move has turned
// once it has woken and slept again: here, a shell that reads a line per
// turn. It is still waited for until that turn, and one turn is enough
// (two sleeps would be needed if the build could not be seen asleep).
func TestTurnAfterAsleep(t *testing.T) {
	cmd, in := startShell(t, "while read x; do :; done")
	w := watch{pid: cmd.Process.Pid}
	waitFor(t, "blocked on its read", func() bool { a, _ := w.asleep(); return a })
	r := &runner{opts: Options{StepTimeout: time.Minute}, proc: running{}, watch: w}
	done := make(chan bool, 1)
	go func() { done <- r.turn() }()
	select {
	case <-done:
		t.Fatal("turn returned before the build turned")
	case <-time.After(300 * time.Millisecond):
	}
	io.WriteString(in, "one turn\n")
	if !<-done {
		t.Fatal("turn waited out its bound after one turn of a build seen asleep")
	}
}

// running is a process that has not exited.
type running struct{ kavach.Process }

func (running) Exited() *kavach.Exit { return nil }

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
