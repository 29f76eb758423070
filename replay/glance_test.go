package replay

import (
	"io"
	"strconv"
	"testing"
)

// TestGlanceFollowsTheTree: glance, the look kept cheap with its /proc
// files open, says what look says, and sees a process that appears in
// the tree after the files were opened: a shell blocked on a read is not
// busy; once it has started a child that spins, it is.
func TestGlanceFollowsTheTree(t *testing.T) {
	cmd, in := startShell(t, "read x; (while :; do :; done) & read y")
	w := watch{pid: cmd.Process.Pid, cache: &lookCache{}}
	defer w.cache.close()
	waitFor(t, "blocked on its read", func() bool { b, _ := w.look(); return !b })
	for range 3 {
		if busy, stopped := w.glance(); busy || stopped {
			t.Fatalf("glance of a shell blocked on a read: busy %v, stopped %v", busy, stopped)
		}
	}
	if len(w.cache.procs) != 1 {
		t.Fatalf("cache holds %d processes, want the shell alone", len(w.cache.procs))
	}
	io.WriteString(in, "go\n")
	waitFor(t, "started its child", func() bool { return len(w.tree()) > 1 })
	waitFor(t, "busy with its spinning child", func() bool { b, _ := w.glance(); return b })
	if len(w.cache.procs) < 2 {
		t.Fatalf("cache holds %d processes after the child appeared", len(w.cache.procs))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
