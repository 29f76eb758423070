package redisbuild

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kavach-dev/kavach/internal/syncbuf"
	"github.com/kavach-dev/kavach/replay"
)

// The planted faults, applied in this order: PING answers +PONG-PATCHED, and
// ECHO boom writes through a NULL pointer (the server dies of SIGSEGV).
var plantedPatches = []string{"testdata/ping-patched.patch", "testdata/echo-boom-crash.patch"}

func TestPristine(t *testing.T) {
	t.Parallel()
	bin := MustBuild(t)
	s := startServer(t, bin, nil)
	expect(t, s, "+PONG", "PING")
	expect(t, s, "$boom", "ECHO", "boom")

	start := time.Now()
	again := MustBuild(t)
	if again != bin {
		t.Errorf("second Build() = %s, want the cached %s", again, bin)
	}
	t.Logf("cached Build() took %v", time.Since(start))
}

func TestPlantedFaults(t *testing.T) {
	t.Parallel()
	// Two builds of the same key at once: one builds, the other waits for
	// it and finds it in the cache.
	var wg sync.WaitGroup
	bins := make([]string, 2)
	errs := make([]error, 2)
	for i := range bins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bins[i], errs[i] = Build(plantedPatches...)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if bins[0] != bins[1] {
		t.Fatalf("concurrent builds of the same patches gave %s and %s", bins[0], bins[1])
	}
	bin := bins[0]

	start := time.Now()
	again := MustBuild(t, plantedPatches...)
	took := time.Since(start)
	if again != bin {
		t.Errorf("second Build() = %s, want the cached %s", again, bin)
	}
	if took > 5*time.Second {
		t.Errorf("second Build() took %v: not a cache hit", took)
	}
	t.Logf("cached Build() took %v", took)

	if pristine := MustBuild(t); pristine == bin {
		t.Fatalf("patched and pristine builds share the path %s", bin)
	}

	s := startServer(t, bin, nil)
	expect(t, s, "+PONG-PATCHED", "PING")
	expect(t, s, "$hello", "ECHO", "hello")

	// ECHO boom kills the server.
	c := s.dial(t)
	if r, err := c.do("ECHO", "boom"); err == nil {
		t.Fatalf("ECHO boom answered %s; want the connection closed by a crash", r)
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("server still running 10s after ECHO boom\n%s", s.output())
	}
	ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSEGV {
		t.Fatalf("server ended with %v, want killed by SIGSEGV\n%s", s.cmd.ProcessState, s.output())
	}
	if out := s.output(); !strings.Contains(out, "crashed by signal") {
		t.Errorf("no crash report in the server's output:\n%s", out)
	}
}

func TestPatchErrors(t *testing.T) {
	t.Parallel()
	_, err := Build("testdata/no-such.patch")
	if err == nil || !strings.Contains(err.Error(), "patch file not found") || !strings.Contains(err.Error(), "no-such.patch") {
		t.Errorf("Build(missing patch) error = %v; want one naming the missing file", err)
	}

	// A patch whose context is not in the source.
	bad := filepath.Join(t.TempDir(), "stale-context.patch")
	const stale = `--- a/src/server.c
+++ b/src/server.c
@@ -1,3 +1,3 @@
 this line
-is not in
+was never in
 server.c
`
	if err := os.WriteFile(bad, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Build(plantedPatches[0], bad)
	if err == nil {
		t.Fatal("Build(stale patch) succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "patch does not apply: "+bad) || !strings.Contains(msg, "FAILED") {
		t.Errorf("Build(stale patch) error does not name the patch or show patch's output:\n%s", msg)
	}
	t.Logf("failed in %v:\n%s", time.Since(start), msg)
}

// TestUnderTheClock: a build, plain (MALLOC=libc) and as make builds it
// by default (the bundled jemalloc), starts under the replay's clock
// library and reads its virtual time.
func TestUnderTheClock(t *testing.T) {
	t.Parallel()
	lib, err := replay.ClockLibrary()
	if err != nil {
		t.Fatal(err)
	}
	builds := map[string]string{"libc": MustBuild(t)}
	if os.Getenv("KAVACH_REDIS_MALLOC") == "" {
		// A plain make: the malloc of the build a user ships.
		cmd := exec.Command("../../scripts/redis-build.sh")
		cmd.Env = append(os.Environ(), "KAVACH_REDIS_MALLOC=jemalloc")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("jemalloc build: %v", err)
		}
		builds["jemalloc"] = strings.TrimSpace(string(out))
	}
	for name, bin := range builds {
		c, err := replay.NewClock(t.TempDir(), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Freeze()
		s := startServer(t, bin, c.Env(lib))
		r, err := s.dial(t).do("TIME")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.elems) != 2 {
			t.Fatalf("%s: TIME = %s, want two elements", name, r)
		}
		if r.elems[0].str != "1893456000" || r.elems[1].str != "500" {
			t.Errorf("%s: TIME under the clock = %s, want 1893456000 and 500 µs", name, r)
		}
	}
}

// server is one redis-server started by a test.
type server struct {
	cmd    *exec.Cmd
	addr   string
	out    *syncbuf.Buffer
	exited chan struct{} // closed once cmd.Wait returns
}

// startServer starts bin on a free port with extra environment variables,
// waits until it answers PING and stops it when the test ends.
func startServer(t *testing.T, bin string, env []string) *server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	s := &server{
		addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		out:    &syncbuf.Buffer{},
		exited: make(chan struct{}),
	}
	s.cmd = exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--daemonize", "no")
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout = s.out
	s.cmd.Stderr = s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.stop(t) })

	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-s.exited:
			t.Fatalf("%s exited before it was ready: %v\n%s", bin, s.cmd.ProcessState, s.output())
		default:
		}
		if c, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
			_, err := (&client{c, bufio.NewReader(c)}).do("PING")
			c.Close()
			if err == nil {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not answering PING on %s after 15s (a deadlock at start-up?)\n%s", bin, s.addr, s.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the server (SIGTERM, then SIGKILL) and removes what libfaketime
// leaves in /dev/shm when a process is killed.
func (s *server) stop(t *testing.T) {
	pid := s.cmd.Process.Pid
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			t.Logf("redis-server %d ignored SIGTERM for 5s: killing it", pid)
			s.cmd.Process.Kill()
			<-s.exited
		}
	}
	os.Remove(fmt.Sprintf("/dev/shm/faketime_shm_%d", pid))
	os.Remove(fmt.Sprintf("/dev/shm/sem.faketime_sem_%d", pid))
}

func (s *server) output() string { return s.out.String() }

func (s *server) dial(t *testing.T) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c, bufio.NewReader(c)}
}

// expect sends one command on a new connection and checks the reply's
// rendering (see reply.String).
func expect(t *testing.T, s *server, want string, args ...string) {
	t.Helper()
	r, err := s.dial(t).do(args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, s.output())
	}
	if got := r.String(); got != want {
		t.Errorf("%s = %s, want %s", strings.Join(args, " "), got, want)
	}
}

// client is a minimal RESP2 client.
type client struct {
	conn net.Conn
	r    *bufio.Reader
}

// reply is one RESP2 reply: kind is its type byte (+ - : $ *).
type reply struct {
	kind  byte
	str   string
	nil   bool
	elems []reply
}

// String renders a reply in one line: "+PONG", "$boom", "*[$1 $2]".
func (r reply) String() string {
	switch {
	case r.nil:
		return string(r.kind) + "nil"
	case r.kind == '*':
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = e.String()
		}
		return "*[" + strings.Join(parts, " ") + "]"
	default:
		return string(r.kind) + r.str
	}
}

func (c *client) do(args ...string) (reply, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return reply{}, err
	}
	return c.read()
}

func (c *client) read() (reply, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return reply{}, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return reply{}, errors.New("empty reply line")
	}
	r := reply{kind: line[0], str: line[1:]}
	switch r.kind {
	case '+', '-', ':':
		return r, nil
	case '$', '*':
		n, err := strconv.Atoi(r.str)
		if err != nil {
			return reply{}, fmt.Errorf("bad length in %q", line)
		}
		if n < 0 {
			r.nil = true
			return r, nil
		}
		if r.kind == '$' {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(c.r, buf); err != nil {
				return reply{}, err
			}
			r.str = string(buf[:n])
			return r, nil
		}
		r.str = ""
		for range n {
			e, err := c.read()
			if err != nil {
				return reply{}, err
			}
			r.elems = append(r.elems, e)
		}
		return r, nil
	}
	return reply{}, fmt.Errorf("unknown reply type in %q", line)
}

// TestKeysBuildFromTheirOwnSources asks for two keys in alternating order,
// the pristine source and the planted faults (which other tests build too;
// on a cold cache this test may be the one building them), and checks that
// each binary does what its patches say and that each build's manifest
// names its own patches: no key is answered with another key's build.
func TestKeysBuildFromTheirOwnSources(t *testing.T) {
	t.Parallel()
	type key struct {
		patches []string
		pong    string
	}
	keys := []key{{nil, "+PONG"}, {plantedPatches, "+PONG-PATCHED"}}
	var bins []string
	for range 2 {
		for _, k := range keys {
			bin := MustBuild(t, k.patches...)
			s := startServer(t, bin, nil)
			expect(t, s, k.pong, "PING")
			expect(t, s, "$hello", "ECHO", "hello")
			s.stop(t)

			manifest, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "manifest"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(string(manifest), "\n") {
				if f := strings.Fields(line); len(f) == 3 && f[0] == "patch" {
					got = append(got, filepath.Base(f[2]))
				}
			}
			var want []string
			for _, p := range k.patches {
				want = append(want, filepath.Base(p))
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s: manifest names patches %q, want %q", bin, got, want)
			}
			bins = append(bins, bin)
		}
	}
	if bins[0] == bins[1] || bins[0] != bins[2] || bins[1] != bins[3] {
		t.Errorf("builds in alternating order: %q; want two distinct paths, each given again", bins)
	}
}
