package replay

import (
	"io"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestGlanceFollowsTheTree: glance, the look kept cheap with its /proc
// files open, says what look says, and sees a process that appears in
// the tree after the files were opened: a shell blocked on a read is not
// busy; once it has started a child that spins, it is.
func TestGlanceFollowsTheTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read x; (while :; do :; done) & read y")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, pid := range (watch{pid: cmd.Process.Pid}).tree()[1:] {
			exec.Command("kill", "-9", itoa(pid)).Run()
		}
		cmd.Process.Kill()
		cmd.Wait()
	}()
	w := watch{pid: cmd.Process.Pid, cache: &lookCache{}}
	defer w.cache.close()
	// until: the condition, polled; the bound is only against a hang.
	until := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !cond(); {
			if time.Now().After(end) {
				t.Fatalf("never %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	until("blocked on its read", func() bool { b, _ := w.look(); return !b })
	for range 3 {
		if busy, stopped := w.glance(); busy || stopped {
			t.Fatalf("glance of a shell blocked on a read: busy %v, stopped %v", busy, stopped)
		}
	}
	if len(w.cache.procs) != 1 {
		t.Fatalf("cache holds %d processes, want the shell alone", len(w.cache.procs))
	}
	io.WriteString(in, "go\n")
	until("started its child", func() bool { return len(w.tree()) > 1 })
	until("busy with its spinning child", func() bool { b, _ := w.glance(); return b })
	if len(w.cache.procs) < 2 {
		t.Fatalf("cache holds %d processes after the child appeared", len(w.cache.procs))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
