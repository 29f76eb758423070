package launch

import (
	"bytes"
	"context"
	"io"
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

// watcherOf is the pid of the watcher of the Kavach kavachPid (0: none).
func watcherOf(t *testing.T, kavachPid int) int {
	t.Helper()
	self := procOwner(kavachPid)
	if self == "" {
		return 0
	}
	want := []byte(watchName + "\x00" + watchRun + "\x00" + self + "\x00")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Equal(b, want) && alive(pid) {
			return pid
		}
	}
	return 0
}

// redisServer is the path of the packaged Redis server.
func redisServer(t *testing.T) string {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (make test installs it): %v", err)
	}
	return server
}

// TestWatcherAfterKill9: a kill -9 of Kavach leaves nothing of its
// builds running, without waiting for a next Kavach: a wrapper script's
// server (not exec'd), one that left by setsid, a double fork's (re-parented
// to Kavach, the subreaper, then to init) and one whose environment was
// cleared are all gone within moments, and the build's directory with
// them. Redis rewrites its environment for its process title, so no
// server here keeps its mark: they are found by their process group, by
// the build's network namespace (isolated) or, shared, by Kavach's
// process tree as the watcher last read it.
func TestWatcherAfterKill9(t *testing.T) {
	if path := os.Getenv("KAVACH_WATCH_HELPER"); path != "" {
		// The Kavach to be killed: starts the build, says its directory,
		// and waits.
		p, err := Spawn{Launch: kavach.Launch{Path: path, Args: []string{"--port", "{port}"}}, Ready: tcpReady}.Start(context.Background())
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(p.Dir() + "\n")
		if os.Getenv("KAVACH_WATCH_HELPER_EXIT") != "" {
			// Until its input ends, then a clean stop and exit.
			io.Copy(io.Discard, os.Stdin)
			p.Stop()
			os.Exit(0)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	server := redisServer(t)
	t.Run("isolated", func(t *testing.T) {
		if Isolation() != "netns" {
			t.Skipf("builds are not isolated here: %s", IsolationReason())
		}
		killedWithBuild(t, server, nil)
	})
	t.Run("shared", func(t *testing.T) { killedWithBuild(t, server, []string{"KAVACH_NO_NETNS=1"}) })
}

// killedWithBuild starts a Kavach (this test binary, with env added) that
// starts a wrapper build of server, kills it with SIGKILL, and checks
// that the build's servers and its directory are gone within moments.
func killedWithBuild(t *testing.T, server string, env []string) {
	pids := t.TempDir()
	opts := " --save '' --appendonly no >/dev/null 2>&1"
	wrapper := script(t, `S="`+server+`"
"$S" --port "$2"`+opts+` &
echo $! > `+pids+`/wrapped
setsid "$S" --port 0 --unixsocket "$PWD/a.sock"`+opts+` &
echo $! > `+pids+`/setsid
( "$S" --port 0 --unixsocket "$PWD/b.sock"`+opts+` & echo $! > `+pids+`/doublefork )
env -i "$S" --port 0 --unixsocket "$PWD/c.sock"`+opts+` &
echo $! > `+pids+`/noenv
wait
`)
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatcherAfterKill9$")
	cmd.Env = append(append(os.Environ(), env...), "KAVACH_WATCH_HELPER="+wrapper)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	line := make([]byte, 4096)
	n, _ := out.Read(line)
	buildDir := strings.TrimSpace(string(line[:n]))
	if !strings.Contains(buildDir, "kavach-build-") {
		cmd.Process.Kill()
		t.Fatalf("helper: %q", buildDir)
	}
	servers := map[string]int{}
	for _, name := range []string{"wrapped", "setsid", "doublefork", "noenv"} {
		for deadline := time.Now().Add(10 * time.Second); servers[name] == 0 && time.Now().Before(deadline); {
			b, _ := os.ReadFile(filepath.Join(pids, name))
			if servers[name], _ = strconv.Atoi(strings.TrimSpace(string(b))); servers[name] == 0 {
				time.Sleep(10 * time.Millisecond)
			}
		}
		if !alive(servers[name]) {
			cmd.Process.Kill()
			t.Fatalf("the %s server (pid %d) is not running", name, servers[name])
		}
	}
	// What the watcher last read of the tree holds every server: it reads
	// it every lookEvery, but on a loaded machine (the rest of the suite
	// beside it) its turn can come late; ten periods, not two (a fresh
	// clone's CI run once saw the setsid server missed after two).
	time.Sleep(10 * lookEvery)
	watcher := watcherOf(t, cmd.Process.Pid)
	if watcher == 0 {
		t.Error("the helper Kavach has no watcher")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	for name, pid := range servers {
		for alive(pid) && time.Since(killed) < 5*time.Second {
			time.Sleep(5 * time.Millisecond)
		}
		if alive(pid) {
			st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			t.Logf("%s", st)
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the %s server (pid %d) outlived Kavach's kill -9 by 5 s", name, pid)
		}
	}
	t.Logf("the build's servers were gone %v after Kavach's kill -9", time.Since(killed).Round(time.Millisecond))
	for _, err := os.Stat(buildDir); err == nil && time.Since(killed) < 5*time.Second; _, err = os.Stat(buildDir) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(buildDir); !os.IsNotExist(err) {
		os.RemoveAll(buildDir)
		t.Errorf("the build's directory is left after Kavach's kill -9: %v", err)
	}
	for watcher != 0 && alive(watcher) && time.Since(killed) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if watcher != 0 && alive(watcher) {
		syscall.Kill(watcher, syscall.SIGKILL)
		t.Error("the watcher did not exit once its work was done")
	}
}

// TestWatcherUnseen: the watcher is no build's parent and not this
// process's child, holds nothing of this process's environment, and kills
// nothing while this process lives: a build's process tree (which the
// replay reads to tell a busy build from an idle one) and this process's
// children are what they were without it.
func TestWatcherUnseen(t *testing.T) {
	path := script(t, "sleep 1000 &\nexec python3 -m http.server --bind 127.0.0.1 \"$PORT\" >/dev/null 2>&1\n")
	p, err := Spawn{Launch: kavach.Launch{Path: path}, Env: []string{"PORT={port}"}, Ready: tcpReady}.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	w := watcherOf(t, os.Getpid())
	if w == 0 {
		t.Fatal("no watcher runs for this process")
	}
	st, _ := readStat(w)
	if st.ppid == os.Getpid() {
		t.Errorf("the watcher %d is this process's child", w)
	}
	for _, c := range children(os.Getpid()) {
		if c.pid == w {
			t.Errorf("the watcher %d is listed among this process's children", w)
		}
	}
	tree := ProcessTree(p.Pid())
	if len(tree) != 2 {
		t.Errorf("the build's tree is %v, want the server and its sleep", tree)
	}
	for _, pid := range tree {
		if pid == w {
			t.Errorf("the watcher is in the build's tree %v", tree)
		}
	}
	if env, _ := os.ReadFile("/proc/" + strconv.Itoa(w) + "/environ"); bytes.Contains(env, []byte(OwnerEnv+"=")) {
		t.Errorf("the watcher carries %s: %q", OwnerEnv, env)
	}
	if st.pgrp == syscall.Getpgrp() {
		t.Errorf("the watcher is in this process's group %d (a Ctrl-C would reach it)", st.pgrp)
	}
	time.Sleep(100 * time.Millisecond)
	for _, pid := range tree {
		if !alive(pid) {
			t.Errorf("process %d of a running build was killed", pid)
		}
	}
}

// TestWatcherEndsWithKavach: a Kavach that stops its build and exits
// leaves no watcher running and nothing written down.
func TestWatcherEndsWithKavach(t *testing.T) {
	wrapper := script(t, `"`+redisServer(t)+`" --port "$2" --save '' --appendonly no >/dev/null 2>&1`+"\n")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatcherAfterKill9$")
	cmd.Env = append(os.Environ(), "KAVACH_WATCH_HELPER="+wrapper, "KAVACH_WATCH_HELPER_EXIT=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 4096)
	n, _ := out.Read(line)
	if !strings.Contains(string(line[:n]), "kavach-build-") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q", line[:n])
	}
	kavachPid := cmd.Process.Pid
	time.Sleep(2 * lookEvery) // a look, written down
	watcher := watcherOf(t, kavachPid)
	if watcher == 0 {
		t.Fatal("the helper Kavach has no watcher")
	}
	if _, err := os.Stat(filepath.Join(seenDir(), seenPrefix+strconv.Itoa(kavachPid))); err != nil {
		t.Errorf("the watcher wrote nothing down while the build ran: %v", err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	for i := 0; i < 200 && alive(watcher); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(watcher) {
		syscall.Kill(watcher, syscall.SIGKILL)
		t.Error("the watcher outlived its Kavach's exit by 2 s")
	}
	for _, dir := range []string{os.TempDir(), "/dev/shm"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), seenPrefix+strconv.Itoa(kavachPid)) {
				os.Remove(filepath.Join(dir, e.Name()))
				t.Errorf("%s left in %s", e.Name(), dir)
			}
		}
	}
}

// TestWatcherLookAfterKavachDied: the watcher's last look may come after
// Kavach died and before it reads the end of its pipe (a loaded
// machine). Kavach's death re-parents a setsid server to init, so that
// look finds an empty tree; it must not forget the server seen before,
// which is then among the victims. (A fresh clone's CI once saw
// TestWatcherAfterKill9's setsid server outlive Kavach this way.)
func TestWatcherLookAfterKavachDied(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// "Kavach": a shell whose child leaves for a session of its own.
	kavach := exec.Command("sh", "-c", "setsid sleep 1000 & echo $! > "+pidFile+"; wait")
	if err := kavach.Start(); err != nil {
		t.Fatal(err)
	}
	var server int
	for deadline := time.Now().Add(10 * time.Second); server == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		server, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if server == 0 {
		kavach.Process.Kill()
		kavach.Wait()
		t.Fatal("the setsid child did not start")
	}
	defer syscall.Kill(server, syscall.SIGKILL)
	w := newWatchState(procOwner(kavach.Process.Pid))
	for deadline := time.Now().Add(10 * time.Second); w.seen[server] == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		w.look()
	}
	if w.seen[server] == "" {
		t.Fatalf("a look while Kavach lives does not see its setsid child %d: %v", server, w.seen)
	}
	kavach.Process.Kill()
	kavach.Wait()
	w.look() // Kavach gone, the server init's
	if !w.victims()[server] {
		t.Errorf("the setsid child %d is no victim after a look once Kavach died (seen %v)", server, w.seen)
	}
	// And while Kavach lives, a look whose read misses a process (the
	// children files are not exact while processes fork and exit) keeps it.
	w2 := newWatchState(owner())
	w2.seen = map[int]string{server: w.seen[server]}
	w2.look()
	if w2.seen[server] == "" {
		t.Errorf("a look forgot a process seen before that still runs")
	}
	syscall.Kill(server, syscall.SIGKILL)
	for i := 0; i < 200 && alive(server); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	w2.look()
	if w2.seen[server] != "" {
		t.Errorf("a look kept a process that ended")
	}
}
