package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
)

// proc is what TestKill9DuringDiff reads of a process in /proc.
type proc struct {
	pid, ppid int
	comm      string
	start     string // clock ticks since boot: tells it from a later process given its pid
	live      bool   // not a zombie
}

func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	open, shut := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || shut < open {
		return proc{}, false
	}
	f := strings.Fields(string(b[shut+1:]))
	if len(f) < 20 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return proc{pid: pid, ppid: ppid, comm: string(b[open+1 : shut]), start: f[19], live: f[0] != "Z" && f[0] != "X"}, true
}

// descendants lists the live descendants of pid.
func descendants(pid int) []proc {
	var all []proc
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := readProc(n); ok && p.live {
				all = append(all, p)
			}
		}
	}
	in := map[int]bool{pid: true}
	var out []proc
	for grew := true; grew; {
		grew = false
		for _, p := range all {
			if !in[p.pid] && in[p.ppid] {
				in[p.pid], grew = true, true
				out = append(out, p)
			}
		}
	}
	return out
}

// inDirs lists the live processes whose working directory is under a
// directory whose name starts with prefix (a build's fresh directory).
func inDirs(prefix string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && strings.HasPrefix(cwd, prefix) {
			if p, ok := readProc(n); ok && p.live {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestKill9DuringDiff: kill -9 of kavach diff, mid-diff, whose builds are
// a wrapper script that runs the real redis-server without exec (so that
// the server is the wrapper's child, not Kavach's): no process of the
// builds is left a few seconds later (Kavach's watcher kills them, without
// waiting for a next Kavach).
func TestKill9DuringDiff(t *testing.T) {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (make test installs it): %v", err)
	}
	bin, err := exec.LookPath("kavach")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The failure is one every redis-server gives (INCR of a word), so
	// that the diff goes on to its variants and lasts long enough to be
	// killed mid-way on a fast machine: a failure the build does not give
	// ends the diff after one replay.
	data, err := sampleFixtureFailing("resp", true, 0, kavach.Failure{Step: 5, Signature: "error:ERR",
		Oracle: kavach.Oracle{Kind: kavach.Error, Class: "ERR"}, Evidence: "ERR value is not an integer or out of range"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fixture.kavach"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wrap.sh"), []byte("#!/bin/sh\n"+server+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "diff", "./wrap.sh", "./wrap.sh", "fixture.kavach", "--variants", "64", "-j", "1", "--out", "report.json")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	kavachPid := cmd.Process.Pid
	// Mid-diff: a server runs under its wrapper, a moment into the
	// replays; the kill comes while one does.
	var tree []proc
	wrapped := func() bool {
		tree = descendants(kavachPid)
		for _, p := range tree {
			if p.comm == "redis-server" && p.ppid != kavachPid {
				return true
			}
		}
		return false
	}
	deadline, first := time.Now().Add(2*time.Minute), time.Time{}
	for {
		if wrapped() {
			if first.IsZero() {
				first = time.Now()
			}
			if time.Since(first) > 300*time.Millisecond {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("kavach diff ended (%v) before a wrapped redis-server had run 300 ms under it; its output:\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			t.Fatalf("no wrapped redis-server seen under kavach diff in 2 minutes; its output:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-exited
	builds := filepath.Join(os.TempDir(), "kavach-build-"+strconv.Itoa(kavachPid)+"-")
	left := func() []string {
		var l []string
		for _, p := range tree {
			if now, ok := readProc(p.pid); ok && now.live && now.start == p.start {
				l = append(l, strconv.Itoa(p.pid)+" "+p.comm)
			}
		}
		for _, pid := range inDirs(builds) {
			l = append(l, strconv.Itoa(pid)+" (in a build's directory)")
		}
		return l
	}
	for len(left()) > 0 && time.Since(killed) < 5*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	gone := time.Since(killed)
	t.Logf("kavach diff's %d descendants at the kill were gone %v after it", len(tree), gone.Round(time.Millisecond))
	if l := left(); len(l) > 0 {
		for _, p := range tree {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
		t.Fatalf("5 s after the kill -9 of kavach diff, its builds' processes still run: %v", l)
	}
	if gone > 3*time.Second {
		t.Errorf("the builds outlived kavach diff by %v, want at most a few seconds", gone)
	}
}
