package replay_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/launch"
	"github.com/kavach-dev/kavach/replay"
)

// TestHostileFixtureOpensNothing: a fixture that rebinds the build to every
// address, turns protected mode off and then holds the build with DEBUG
// SLEEP replays as recorded, and while it runs no socket of the build is in
// the tables of Kavach's network: the build listens on 0.0.0.0 in its own
// namespace only.
func TestHostileFixtureOpensNothing(t *testing.T) {
	if launch.Isolation() != "netns" {
		t.Skipf("builds are not isolated here: %s", launch.IsolationReason())
	}
	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	build := kavach.Launch{Path: redisbuild.MustBuild(t), Args: []string{"--enable-debug-command", "local"}}
	type result struct {
		tr  *replay.Trace
		err error
	}
	done := make(chan result, 1)
	go func() {
		tr, err := replay.Run(context.Background(), build, events(
			step{1, 0, []string{"CONFIG", "SET", "protected-mode", "no"}, "+OK\r\n", false},
			step{1, time.Millisecond, []string{"CONFIG", "SET", "bind", "0.0.0.0"}, "+OK\r\n", false},
			step{1, 2 * time.Millisecond, args("DEBUG SLEEP 1"), "+OK\r\n", false},
			step{1, 3 * time.Millisecond, args("PING"), "+PONG\r\n", false},
		), options(tl))
		done <- result{tr, err}
	}()
	// The build's own tables show the rebind (it happened), while the
	// replay runs (the sleep holds it).
	seen := false
	for !seen {
		select {
		case r := <-done:
			t.Fatalf("the replay ended before the build listened on 0.0.0.0 in its namespace (err %v)", r.err)
		case <-time.After(5 * time.Millisecond):
		}
		tl.mu.Lock()
		pids := append([]int(nil), tl.pids...)
		tl.mu.Unlock()
		for _, pid := range pids {
			socks := sockets(pid)
			own := "/proc/" + strconv.Itoa(pid) + "/net/tcp"
			ownRows, _ := rows(own) // gone: the build has exited
			for _, f := range ownRows {
				if f[3] == "0A" && strings.HasPrefix(f[1], "00000000:") && socks[f[9]] {
					seen = true
				}
			}
			if !seen {
				continue
			}
			// And Kavach's network holds none of its sockets.
			for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
				host, err := rows(table)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range host {
					if socks[f[9]] {
						t.Errorf("%s holds a socket of the build: %s state %s", table, f[1], f[3])
					}
				}
			}
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, s := range r.tr.Steps {
		if s.Outcome.Kind != kavach.OK {
			t.Errorf("step %d: %s, want ok (the requests were sent, as recorded)", s.N, s.Outcome)
		}
	}
}

// sockets is the socket inodes the build's processes hold.
func sockets(pid int) map[string]bool {
	socks := map[string]bool{}
	for _, p := range launch.ProcessTree(pid) {
		dir := "/proc/" + strconv.Itoa(p) + "/fd/"
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			if l, err := os.Readlink(dir + fd.Name()); err == nil && strings.HasPrefix(l, "socket:[") {
				socks[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	return socks
}

// rows is the rows of a /proc TCP table, split into fields.
func rows(table string) ([][]string, error) {
	b, err := os.ReadFile(table)
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 10 {
			out = append(out, f)
		}
	}
	return out, nil
}
