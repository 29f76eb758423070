package launch

import (
	"context"
	"errors"
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

	"github.com/kavach-dev/kavach"
)

// script writes an executable shell script: a stand-in build for testing
// the generic process handling (real builds are tested in the integrations).
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "build.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func tcpReady(ctx context.Context, addr string) error {
	c, err := Dial(ctx, addr)
	if err == nil {
		c.Close()
	}
	return err
}

// alive reports whether pid is a live process (a zombie left for a
// non-reaping init counts as gone).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func TestSpawnDiesAtStartup(t *testing.T) {
	path := script(t, "echo 'FATAL: bad config line 3' >&2\nexit 7\n")
	_, err := Spawn{Launch: kavach.Launch{Path: path}, Ready: tcpReady}.Start(context.Background())
	var se *StartError
	if !errors.As(err, &se) || se.Exit == nil || se.Exit.Status != 7 {
		t.Fatalf("err = %v, want a StartError with exit status 7", err)
	}
	if !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "FATAL: bad config line 3") {
		t.Errorf("error does not show the evidence: %v", err)
	}
}

func TestSpawnNeverReady(t *testing.T) {
	// A build that ignores SIGTERM and never listens: the start times out,
	// the process group is killed, nothing is left behind.
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	path := script(t, "trap '' TERM\nsleep 1000 &\necho $! > "+pidFile+"\nwhile :; do sleep 1; done\n")
	_, err := Spawn{Launch: kavach.Launch{Path: path}, Ready: tcpReady, StartTimeout: 300 * time.Millisecond}.Start(context.Background())
	var se *StartError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "never became ready within 300ms") {
		t.Fatalf("err = %v, want never became ready", err)
	}
	if se.Exit == nil || se.Exit.Signal != "SIGKILL" {
		t.Errorf("exit = %+v, want killed by SIGKILL (it ignores SIGTERM)", se.Exit)
	}
	b, _ := os.ReadFile(pidFile)
	var pid int
	for _, c := range strings.TrimSpace(string(b)) {
		pid = pid*10 + int(c-'0')
	}
	if pid == 0 {
		t.Fatal("the build's child did not write its pid")
	}
	// SIGKILL went to the whole group; the kernel delivers it to the
	// child a moment later on a loaded machine.
	for deadline := time.Now().Add(5 * time.Second); alive(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the build's child %d outlived it", pid)
	}
}

func TestSpawnNeverReadyLeavesNoSharedMemory(t *testing.T) {
	// What libfaketime leaves in /dev/shm for a killed process is removed
	// when a start fails, as when a running build is stopped.
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm here")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	path := script(t, "echo $$ > "+pidFile+"\ntouch /dev/shm/faketime_shm_$$ /dev/shm/sem.faketime_sem_$$\nwhile :; do sleep 1; done\n")
	_, err := Spawn{Launch: kavach.Launch{Path: path}, Ready: tcpReady, StartTimeout: 2 * time.Second}.Start(context.Background())
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want never became ready", err)
	}
	pid, _ := os.ReadFile(pidFile)
	if len(pid) == 0 {
		t.Fatal("the build did not write its pid")
	}
	for _, name := range []string{"faketime_shm_", "sem.faketime_sem_"} {
		f := "/dev/shm/" + name + strings.TrimSpace(string(pid))
		if _, err := os.Stat(f); err == nil {
			os.Remove(f)
			t.Errorf("%s left behind", f)
		}
	}
}

func TestSpawnNotExecutable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redis-server")
	os.WriteFile(path, []byte("not a program"), 0o644)
	_, err := Spawn{Launch: kavach.Launch{Path: path}, Ready: tcpReady}.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not an executable file") {
		t.Fatalf("err = %v", err)
	}
	_, err = Spawn{Launch: kavach.Launch{Path: "/nonexistent/redis"}, Ready: tcpReady}.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/redis cannot be started: no such file or directory") {
		t.Fatalf("err = %v", err)
	}
}

func TestSpawnReadyAndStop(t *testing.T) {
	// A service that listens on {port} (via a tiny Go-free listener: the
	// test itself listens and the script just waits): use python-free sh,
	// so probe readiness with a fake Ready that checks the dir and args.
	path := script(t, "echo \"args: $*\"\nexec python3 -m http.server --bind 127.0.0.1 \"$4\" >/dev/null 2>&1\n")
	var gotAddr string
	stopped := false
	spawn := Spawn{
		Launch:   kavach.Launch{Path: path, Args: []string{"--user", "{port}"}},
		Defaults: []string{"--dir", "{dir}"},
		Ready: func(ctx context.Context, addr string) error {
			gotAddr = addr
			return nil
		},
		Shutdown: func(string) { stopped = true },
	}
	p, err := spawn.Start(context.Background())
	for try := 1; try < 3 && err != nil && strings.Contains(err.Error(), "exited during start-up"); try++ {
		// Another test's server took the free port before the build bound
		// it (python3 exits 1): a start that fails so is retried, as a
		// diff retries it (grade.runRetry).
		p, err = spawn.Start(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr() != gotAddr || !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Errorf("addr %q, probed %q", p.Addr(), gotAddr)
	}
	if st, err := os.Stat(p.Dir()); err != nil || !st.IsDir() {
		t.Errorf("fresh dir %s: %v", p.Dir(), err)
	}
	if p.Exited() != nil {
		t.Fatal("running build reports an exit")
	}
	pid := p.Pid()
	exit := p.Stop()
	if !stopped {
		t.Error("Shutdown hook not called")
	}
	if exit == nil || exit.Signal != "SIGTERM" {
		t.Errorf("exit = %+v, want SIGTERM after the gentle stop did nothing", exit)
	}
	if !strings.Contains(exit.LogTail, "args: --dir "+p.Dir()+" --user "+strings.TrimPrefix(p.Addr(), "127.0.0.1:")) {
		t.Errorf("log tail %q does not show the expanded arguments", exit.LogTail)
	}
	if alive(pid) {
		t.Error("process alive after Stop")
	}
	if _, err := os.Stat(p.Dir()); !os.IsNotExist(err) {
		t.Errorf("dir not removed: %v", err)
	}
	if p.Stop() != exit {
		t.Error("second Stop gave other evidence")
	}
}

func TestTailBuffer(t *testing.T) {
	b := newTailBuffer(32)
	for i := 0; i < 10; i++ {
		b.Write([]byte("line number " + string(rune('0'+i)) + "\n"))
	}
	if got := b.String(); got != "line number 8\nline number 9" {
		t.Errorf("tail = %q", got)
	}
}

func TestSpawnRetriesATakenPort(t *testing.T) {
	// A build that fails to listen the first time, as when another process
	// took the port: started again on another port.
	marker := filepath.Join(t.TempDir(), "tried")
	path := script(t, "if [ ! -e "+marker+" ]; then touch "+marker+"; echo 'Failed listening on port 1234 (TCP), aborting.'; exit 1; fi\nexec python3 -m http.server --bind 127.0.0.1 \"$1\" >/dev/null 2>&1\n")
	p, err := Spawn{Launch: kavach.Launch{Path: path, Args: []string{"{port}"}}, Ready: func(context.Context, string) error { return nil }}.Start(context.Background())
	if err != nil {
		t.Fatalf("second try not made: %v", err)
	}
	p.Stop()
	// A build that always fails for another reason is not retried forever.
	calls := filepath.Join(t.TempDir(), "calls")
	path = script(t, "echo x >> "+calls+"\necho 'bad config'\nexit 1\n")
	if _, err := (Spawn{Launch: kavach.Launch{Path: path}, Ready: tcpReady}).Start(context.Background()); err == nil {
		t.Fatal("a failing build started")
	}
	if b, _ := os.ReadFile(calls); strings.Count(string(b), "x") != 1 {
		t.Errorf("a build that fails for another reason was started %d times", strings.Count(string(b), "x"))
	}
}

// TestSpawnStartCancelled: a start stopped by its context (a signal to
// Kavach) returns at once with the cancellation, not at the start
// timeout, and leaves no process, no directory and no shared memory.
func TestSpawnStartCancelled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	path := script(t, "echo $$ > "+pidFile+".tmp; mv "+pidFile+".tmp "+pidFile+
		"\ntouch /dev/shm/faketime_shm_$$ /dev/shm/sem.faketime_sem_$$\nwhile :; do sleep 1; done\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(pidFile); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	dir := t.TempDir()
	_, err := Spawn{Launch: kavach.Launch{Path: path}, Ready: tcpReady, StartTimeout: time.Hour, Dir: dir}.Start(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the start stopped by its context", err)
	}
	pid, _ := os.ReadFile(pidFile)
	n, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if n > 0 && alive(n) {
		t.Errorf("the build %d outlived its cancelled start", n)
	}
	for _, name := range []string{"faketime_shm_", "sem.faketime_sem_"} {
		f := "/dev/shm/" + name + strconv.Itoa(n)
		if _, err := os.Stat(f); err == nil {
			os.Remove(f)
			t.Errorf("%s left behind", f)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("left in the build's folder: %v", left)
	}
	// A context already done starts nothing.
	if _, err := (Spawn{Launch: kavach.Launch{Path: path}, Ready: tcpReady}).Start(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("start with a done context: %v, want it refused", err)
	}
}

// TestSpawnStoppedWithContext: a running build is stopped, its group
// with it, when the context it was started with is done.
func TestSpawnStoppedWithContext(t *testing.T) {
	path := script(t, "sleep 1000 &\nexec python3 -m http.server --bind 127.0.0.1 \"$PORT\" >/dev/null 2>&1\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := Spawn{Launch: kavach.Launch{Path: path}, Env: []string{"PORT={port}"}, Ready: tcpReady}.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tree := ProcessTree(p.Pid())
	cancel()
	<-p.Done()
	p.Stop() // waits for the group and the directory
	for _, pid := range tree {
		if alive(pid) {
			t.Errorf("process %d of the build's tree outlived its context", pid)
		}
	}
	if _, err := os.Stat(p.Dir()); err == nil {
		t.Errorf("the build's directory %s is left", p.Dir())
	}
}

// TestListening: a port is the build's only when a process of its tree
// holds the listening socket. Another process listening there (one that
// took the port between FreePort and the build's bind) is not the build,
// although a connection to the port would be accepted.
func TestListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	// A socket connected to it, and a Unix listener: neither listens on
	// the port.
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	u, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	other := exec.Command("sleep", "100")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	// Both ways of asking: the sockets themselves, and the tables.
	for _, tables := range []bool{false, true} {
		pidfdRefused.Store(tables)
		if !Listening(os.Getpid(), port) {
			t.Errorf("tables %v: the test process listens on %d: Listening says no", tables, port)
		}
		if Listening(os.Getpid(), c.LocalAddr().(*net.TCPAddr).Port) {
			t.Errorf("tables %v: a connected socket's port counted as listening", tables)
		}
		if Listening(other.Process.Pid, port) {
			t.Errorf("tables %v: a process that does not listen on %d: Listening says yes", tables, port)
		}
		if !tables && pidfdRefused.Load() {
			t.Logf("the kernel refused pidfd_getfd here: Listening reads the tables")
		}
	}
	pidfdRefused.Store(false)
}

// TestStopKillsWhatLeftTheGroup: a build's children that left its
// process group — a setsid child, a daemon's double fork — are killed
// with it.
func TestStopKillsWhatLeftTheGroup(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	path := script(t, "setsid sleep 1000 </dev/null >/dev/null 2>&1 &\necho $! >> "+pids+"\n"+
		"(setsid sleep 1001 </dev/null >/dev/null 2>&1 & echo $! >> "+pids+")\n"+
		"exec python3 -m http.server --bind 127.0.0.1 \"$2\" >/dev/null 2>&1\n")
	spawn := Spawn{Launch: kavach.Launch{Path: path, Args: []string{"--port", "{port}"}}, Ready: tcpReady}
	p, err := spawn.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	var children []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		children = append(children, n)
	}
	if len(children) != 2 || !alive(children[0]) || !alive(children[1]) {
		t.Fatalf("children %v not running", children)
	}
	p.Stop()
	for _, c := range children {
		for i := 0; i < 100 && alive(c); i++ {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(c) {
			syscall.Kill(c, syscall.SIGKILL)
			t.Errorf("process %d, which left the build's group, outlived Stop", c)
		}
	}
}

// TestSweepAfterKill9: what a Kavach killed with kill -9, its watcher
// with it, left — a wrapper script's servers still running (one marked,
// one that left the group and lost its mark, written down by the
// watcher), its build directory, its clock directory, libfaketime's files
// — is removed by the next one's Sweep; what belongs to a running Kavach
// is not.
func TestSweepAfterKill9(t *testing.T) {
	if os.Getenv("KAVACH_SWEEP_HELPER") != "" {
		// The Kavach to be killed: starts a wrapper build (a script whose
		// server is its child, not exec'd), says its pids, and waits.
		path := os.Getenv("KAVACH_SWEEP_HELPER")
		p, err := Spawn{Launch: kavach.Launch{Path: path, Args: []string{"--port", "{port}"}}, Ready: tcpReady}.Start(context.Background())
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(p.Dir() + "\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	server, redis := filepath.Join(dir, "server.pid"), filepath.Join(dir, "redis.pid")
	// A server that keeps its mark, and one that leaves the group and
	// rewrites its environment (and so its mark) for its process title.
	wrapper := script(t, "python3 -m http.server --bind 127.0.0.1 \"$2\" >/dev/null 2>&1 &\necho $! > "+server+"\n"+
		"setsid "+redisServer(t)+" --port 0 --unixsocket \"$PWD/r.sock\" --save '' --appendonly no >/dev/null 2>&1 &\necho $! > "+redis+".tmp\nmv "+redis+".tmp "+redis+"\nwait\n")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweepAfterKill9$")
	cmd.Env = append(os.Environ(), "KAVACH_SWEEP_HELPER="+wrapper)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 4096)
	n, _ := out.Read(line)
	buildDir := strings.TrimSpace(string(line[:n]))
	if !strings.Contains(buildDir, "kavach-build-") {
		cmd.Process.Kill()
		t.Fatalf("helper: %q", buildDir)
	}
	b, _ := os.ReadFile(server)
	serverPid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for i := 0; i < 500 && func() bool { _, err := os.Stat(redis); return err != nil }(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	b, _ = os.ReadFile(redis)
	redisPid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if redisPid <= 0 || !alive(redisPid) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the setsid redis-server is not running (pid %d)", redisPid)
	}
	// Seen and written down by the watcher.
	time.Sleep(3 * lookEvery)
	// What the dead Kavach's clock and libfaketime left, beside.
	gone := cmd.Process.Pid
	clock := filepath.Join(os.TempDir(), "kavach-clock-"+strconv.Itoa(gone)+"-123")
	os.Mkdir(clock, 0o755)
	ours := filepath.Join(os.TempDir(), DirPattern("clock")+"456")
	os.Mkdir(ours, 0o755)
	defer os.Remove(ours)
	// Its watcher killed first (pkill -9 -f kavach, say), so that what
	// the sweep is for is left: the watcher's own test is
	// TestWatcherAfterKill9.
	w := watcherOf(t, gone)
	if w <= 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the helper Kavach has no watcher")
	}
	syscall.Kill(w, syscall.SIGKILL)
	for i := 0; i < 100 && alive(w); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !alive(serverPid) {
		t.Fatalf("the wrapper's server (pid %d) died with Kavach: nothing to sweep", serverPid)
	}
	if !alive(redisPid) {
		t.Fatalf("the setsid redis-server (pid %d) died with Kavach: nothing to sweep", redisPid)
	}
	sweepOnce = sync.OnceFunc(sweep) // a new Kavach
	Sweep()
	for name, pid := range map[string]int{"server": serverPid, "setsid redis-server": redisPid} {
		for i := 0; i < 100 && alive(pid); i++ {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the wrapper's %s outlived the sweep", name)
		}
	}
	for _, d := range []string{buildDir, clock} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			os.RemoveAll(d)
			t.Errorf("%s left after the sweep (%v)", d, err)
		}
	}
	if _, err := os.Stat(ours); err != nil {
		t.Errorf("the sweep removed a running Kavach's directory: %v", err)
	}
}

// TestWrapperOrphansReaped: a wrapper script that exits leaving its
// server running re-parents it to Kavach, the subreaper; Stop
// kills it and reaps it — nothing is left, not even a zombie — and takes
// no exit status from a child os/exec started.
func TestWrapperOrphansReaped(t *testing.T) {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (make test installs it): %v", err)
	}
	tmp := t.TempDir()
	pidFile, quit := filepath.Join(tmp, "pid"), filepath.Join(tmp, "quit")
	// The wrapper runs the server, and exits when told, leaving it.
	path := script(t, "\""+server+"\" --port \"$2\" --save '' --appendonly no >/dev/null 2>&1 &\necho $! > "+pidFile+"\n"+
		"while [ ! -e "+quit+" ]; do sleep 0.02; done\n")
	// A child of this process's own, started before and waited for after.
	own := exec.Command("sleep", "1000")
	if err := own.Start(); err != nil {
		t.Fatal(err)
	}
	spawn := Spawn{Launch: kavach.Launch{Path: path, Args: []string{"--port", "{port}"}}, Ready: tcpReady}
	p, err := spawn.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(quit, nil, 0o644)
	<-p.Done()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	orphan, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if st, ok := readStat(orphan); !ok || st.ppid != os.Getpid() {
		t.Fatalf("the wrapper's server %d has parent %d, want this process (the subreaper %v)", orphan, st.ppid, Subreaper())
	}
	p.Stop()
	if _, ok := readStat(orphan); ok {
		t.Errorf("the wrapper's server %d is still there after Stop (alive %v, else a zombie)", orphan, alive(orphan))
	}
	own.Process.Kill()
	if err := own.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("this process's own child's exit: %v, want its own status (killed)", err)
	}
}

// TestSpawnStateDir: a build given a state directory (Launch.State) starts
// with a copy of it in its fresh directory, named by {state} in its
// arguments and environment; what it writes there never reaches the
// original, the next start gets a fresh copy, and Stop removes it. A
// launch naming {state} without one is refused before anything starts,
// and a state directory holding a symbolic link is refused.
func TestSpawnStateDir(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"items.json": "original", "sub/a.txt": "a"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	// It reports what it found, then writes into its copy.
	path := script(t, `cat "$2/items.json" > "$OUT/seen"
cat "$2/sub/a.txt" >> "$OUT/seen"
stat -c %a "$2/items.json" > "$OUT/mode"
echo "$STATE_ENV" > "$OUT/env"
echo changed > "$2/items.json"
touch "$2/new"
echo "$2" > "$OUT/path.tmp" && mv "$OUT/path.tmp" "$OUT/path"
exec python3 -m http.server --bind 127.0.0.1 "$4" >/dev/null 2>&1
`)
	ready := func(context.Context, string) error {
		_, err := os.Stat(filepath.Join(out, "path"))
		return err
	}
	spawn := Spawn{
		Launch: kavach.Launch{Path: path, Args: []string{"--state", "{state}", "--port", "{port}"}, Env: []string{"OUT=" + out, "STATE_ENV={state}"}, State: src},
		Ready:  ready,
	}
	for run := 1; run <= 2; run++ {
		os.Remove(filepath.Join(out, "path"))
		p, err := spawn.Start(context.Background())
		for try := 1; try < 3 && err != nil && strings.Contains(err.Error(), "exited during start-up"); try++ {
			// Another test's server took the free port (as in
			// TestSpawnReadyAndStop).
			p, err = spawn.Start(context.Background())
		}
		if err != nil {
			t.Fatal(err)
		}
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(out, name))
			return strings.TrimSpace(string(b))
		}
		copyDir := filepath.Join(p.Dir(), StateDir)
		if got := read("path"); got != copyDir {
			t.Errorf("run %d: {state} in the arguments is %q, want %q", run, got, copyDir)
		}
		if got := read("env"); got != copyDir {
			t.Errorf("run %d: {state} in the environment is %q, want %q", run, got, copyDir)
		}
		if got := read("seen"); got != "originala" {
			t.Errorf("run %d: the build saw %q, want the original files", run, got)
		}
		if got := read("mode"); got != "640" {
			t.Errorf("run %d: the copy's mode is %s, want 640", run, got)
		}
		p.Stop()
		if _, err := os.Stat(copyDir); !os.IsNotExist(err) {
			t.Errorf("run %d: the copy outlived the build: %v", run, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(src, "items.json")); string(b) != "original" {
		t.Errorf("the original state directory was written: items.json is %q", b)
	}
	if _, err := os.Stat(filepath.Join(src, "new")); !os.IsNotExist(err) {
		t.Errorf("the build's new file reached the original: %v", err)
	}

	// {state} without a state directory: refused, in the arguments or
	// the environment.
	for _, l := range []kavach.Launch{
		{Path: path, Args: []string{"--state", "{state}"}},
		{Path: path, Env: []string{"DATA={state}/x"}},
	} {
		_, err := Spawn{Launch: l, Ready: ready}.Start(context.Background())
		var se *StartError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "name {state}, but it was given no state directory") {
			t.Errorf("%+v: %v, want refused", l, err)
		}
	}
	// A state directory holding a symbolic link.
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := spawn.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "link is not a regular file or a directory") {
		t.Errorf("state directory with a symbolic link: %v, want refused", err)
	}
}

// TestSpawnSaveState: SaveState stops the build and copies its state
// directory as the build left it, what it wrote on its way out (on
// SIGTERM) included, before the build's directory is removed; the
// original is untouched. A second SaveState, the build gone, and one of a
// build given no state directory are errors.
func TestSpawnSaveState(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "items.json"), []byte("original"), 0o640); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	path := script(t, `echo changed > "$2/items.json"
trap 'echo bye > "$2/bye"; exit 0' TERM
python3 -m http.server --bind 127.0.0.1 "$4" >/dev/null 2>&1 &
touch "$OUT/up"
wait
`)
	ready := func(context.Context, string) error {
		_, err := os.Stat(filepath.Join(out, "up"))
		return err
	}
	start := func(l kavach.Launch) *Spawned {
		t.Helper()
		os.Remove(filepath.Join(out, "up"))
		p, err := Spawn{Launch: l, Ready: ready}.Start(context.Background())
		for try := 1; try < 3 && err != nil && strings.Contains(err.Error(), "exited during start-up"); try++ {
			p, err = Spawn{Launch: l, Ready: ready}.Start(context.Background()) // the port taken meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := start(kavach.Launch{Path: path, Args: []string{"--state", "{state}", "--port", "{port}"}, Env: []string{"OUT=" + out}, State: src})
	dst := filepath.Join(t.TempDir(), "saved")
	if err := p.SaveState(dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"items.json": "changed\n", "bye": "bye\n"} {
		if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(b) != want {
			t.Errorf("saved %s: %q, %v; want %q", name, b, err, want)
		}
	}
	if _, err := os.Stat(p.Dir()); !os.IsNotExist(err) {
		t.Errorf("the build's directory outlived it: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "items.json")); string(b) != "original" {
		t.Errorf("the original state directory was written: %q", b)
	}
	if err := p.SaveState(filepath.Join(t.TempDir(), "again")); err == nil || !strings.Contains(err.Error(), "was stopped before") {
		t.Errorf("SaveState of a build already stopped: %v, want an error saying so", err)
	}
	bare := start(kavach.Launch{Path: path, Args: []string{"--state", t.TempDir(), "--port", "{port}"}, Env: []string{"OUT=" + out}})
	if err := bare.SaveState(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "state directory") {
		t.Errorf("SaveState of a build given no state directory: %v, want an error", err)
	}
}
