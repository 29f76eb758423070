package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

// TestRebindReachesNothingOutside: a fixture's CONFIG SET bind 0.0.0.0,
// protected-mode no and port 6379, sent to a build as a replay sends them,
// open nothing in Kavach's network: every socket of the build is in its
// own namespace's tables, none in the tables Kavach sees, and a MIGRATE
// to a listener in Kavach's network reaches nothing.
func TestRebindReachesNothingOutside(t *testing.T) {
	if launch.Isolation() != "netns" {
		t.Skipf("builds are not isolated here: %s", launch.IsolationReason())
	}
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	pid := p.(*launch.Spawned).Pid()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range [][]string{
		{"CONFIG", "SET", "protected-mode", "no"},
		{"CONFIG", "SET", "bind", "0.0.0.0"},
	} {
		if v, err := call(ctx, p.Addr(), c...); err != nil || v.Kind == KindError {
			t.Fatalf("%v: %v %v", c, v, err)
		}
	}
	// The build's own tables show it listening on every address: the
	// requests took effect.
	if !listensOnAny(t, "/proc/"+strconv.Itoa(pid)+"/net/tcp", buildSockets(pid)) {
		t.Fatal("the build does not listen on 0.0.0.0 in its own tables: the rebind did not happen")
	}
	// Kavach's tables hold no socket of the build.
	socks := buildSockets(pid)
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		for _, f := range tableRows(t, table) {
			if socks[f[9]] {
				t.Errorf("%s holds a socket of the build: %s -> %s state %s", table, f[1], f[2], f[3])
			}
		}
	}
	// MIGRATE to a listener of this (Kavach's) network: nothing arrives.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	if _, err := call(ctx, p.Addr(), "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	v, err := call(ctx, p.Addr(), "MIGRATE", "127.0.0.1", port, "k", "0", "1000")
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != KindError {
		t.Errorf("MIGRATE to Kavach's network answered %s, want an error", v)
	}
	// MIGRATE has answered: a connection it made is waiting in the
	// listener's queue now (accept on the non-blocking socket: EAGAIN when
	// it is empty).
	rc, err := l.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var acceptErr error
	rc.Control(func(fd uintptr) {
		var nfd int
		if nfd, _, acceptErr = syscall.Accept4(int(fd), syscall.SOCK_CLOEXEC); acceptErr == nil {
			syscall.Close(nfd)
		}
	})
	if acceptErr == nil {
		t.Error("MIGRATE reached a listener in Kavach's network")
	} else if !errors.Is(acceptErr, syscall.EAGAIN) {
		t.Fatal(acceptErr)
	}
}

// buildSockets is the socket inodes the build's processes hold.
func buildSockets(pid int) map[string]bool {
	socks := map[string]bool{}
	for _, p := range launch.ProcessTree(pid) {
		dir := fmt.Sprintf("/proc/%d/fd/", p)
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			if l, err := os.Readlink(dir + fd.Name()); err == nil && strings.HasPrefix(l, "socket:[") {
				socks[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	return socks
}

// tableRows is the rows of a /proc TCP table, split into fields.
func tableRows(t *testing.T, table string) [][]string {
	t.Helper()
	b, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 10 {
			rows = append(rows, f)
		}
	}
	return rows
}

// listensOnAny reports whether one of socks listens on 0.0.0.0 in table.
func listensOnAny(t *testing.T, table string, socks map[string]bool) bool {
	for _, f := range tableRows(t, table) {
		if f[3] == "0A" && strings.HasPrefix(f[1], "00000000:") && socks[f[9]] {
			return true
		}
	}
	return false
}
