package replay

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

// TestLookCountsADyingRootAsBusy: a root process that exited and is not
// reaped yet is not idle (its exit is what comes next, and Kavach has not
// seen it), while a zombie child the build has not reaped is not work.
// Planted: without the dying rule, the first look says idle.
func TestLookCountsADyingRootAsBusy(t *testing.T) {
	root := exec.Command("sh", "-c", "exit 0")
	if err := root.Start(); err != nil {
		t.Fatal(err)
	}
	w := watch{pid: root.Process.Pid}
	waitFor(t, "a zombie", func() bool {
		b, _ := os.ReadFile("/proc/" + itoa(w.pid) + "/stat")
		s, _ := stateFlags(b[bytes.LastIndexByte(b, ')')+1:])
		return s == 'Z'
	})
	if busy, _ := w.look(); !busy {
		t.Error("look of an exited, unreaped root: idle, want busy until its exit is seen")
	}
	root.Wait()
	if busy, _ := w.look(); !busy {
		t.Error("look of a reaped root: idle, want busy until its exit is seen")
	}

	// glance, with the files it keeps open, reads it alike: a build seen
	// idle, then killed and not reaped, is busy.
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	g := watch{pid: sleeper.Process.Pid, cache: &lookCache{}}
	defer g.cache.close()
	waitFor(t, "asleep", func() bool { b, _ := g.glance(); return !b })
	if len(g.cache.procs) != 1 {
		t.Fatalf("glance keeps %d processes open, want the sleeper", len(g.cache.procs))
	}
	sleeper.Process.Kill()
	waitFor(t, "a zombie", func() bool {
		b, _ := os.ReadFile("/proc/" + itoa(g.pid) + "/stat")
		s, _ := stateFlags(b[bytes.LastIndexByte(b, ')')+1:])
		return s == 'Z'
	})
	if busy, _, ok := g.cache.read(); ok && !busy {
		t.Error("the kept files of a killed, unreaped build read idle")
	}
	if busy, _ := g.glance(); !busy {
		t.Error("glance of a killed, unreaped build: idle, want busy until its exit is seen")
	}
	sleeper.Wait()
	if busy, _ := g.glance(); !busy {
		t.Error("glance of a reaped build: idle, want busy until its exit is seen")
	}

	// sleep does not reap the child the shell left it.
	parent := exec.Command("sh", "-c", "(exit 0) & exec sleep 30")
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { parent.Process.Kill(); parent.Wait() }()
	p := watch{pid: parent.Process.Pid}
	waitFor(t, "sleep with a zombie child", func() bool {
		t := p.tree()
		if len(t) != 2 {
			return false
		}
		b, _ := os.ReadFile("/proc/" + itoa(t[1]) + "/stat")
		s, _ := stateFlags(b[bytes.LastIndexByte(b, ')')+1:])
		c, _ := os.ReadFile("/proc/" + itoa(t[0]) + "/comm")
		return s == 'Z' && strings.TrimSpace(string(c)) == "sleep"
	})
	waitFor(t, "idle", func() bool { b, _ := p.look(); return !b })
}

func TestStateFlags(t *testing.T) {
	for _, c := range []struct {
		stat  string
		state byte
		flags uint64
	}{
		{" S 1 2 3 0 -1 4194560 96 0 0", 'S', 4194560},
		{" R 1 2 3 0 -1 4194308 96", 'R', 4194308},
		{" Z 1 2 3 0 -1 4", 'Z', 4},
		{" S 1 2", 'S', 0},
		{" D 1 2 3 0 -1 12x4", 'D', 0},
		{"", 0, 0},
	} {
		if s, f := stateFlags([]byte(c.stat)); s != c.state || f != c.flags {
			t.Errorf("stateFlags(%q) = %c, %d; want %c, %d", c.stat, s, f, c.state, c.flags)
		}
	}
}
