// Package launch starts and stops builds: the generic part of every
// integration's Start (a process group of its own, a fresh directory, a
// free loopback port, its output kept, readiness polled, stopped gently
// then by force, libfaketime's shared memory removed on every path), and
// the checks made before a build is started (CheckExecutable). Every wait
// takes a context: a signal to Kavach stops a start, and the build with
// it.
package launch

import (
	"context"
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
	"time"
	"unsafe"

	"github.com/kavach-dev/kavach"
)

// Spawn is how an integration's Start starts a build: the generic part
// (process group, fresh directory, free port, log capture, readiness
// polling, stopping gently then by force), with the protocol-specific
// parts as func fields.
type Spawn struct {
	Launch kavach.Launch
	// Defaults come before Launch.Args (so the user's arguments win where
	// the service lets a later argument override an earlier one). "{port}",
	// "{dir}" and "{state}" are replaced in both.
	Defaults []string
	// Safety come after Launch.Args, so that they always win: what keeps a
	// build on the loopback interface, in its fresh directory, without
	// persistence, whatever a fixture or a user asks. "{port}", "{dir}"
	// and "{state}" are replaced in them too.
	Safety []string
	// Shared come after Safety where the build shares Kavach's network
	// (the kernel refused it a namespace of its own: Isolation): what the
	// integration adds to keep such a build from reaching out.
	Shared []string
	// Env is added to the build's environment (which is otherwise Kavach's
	// own); "{port}", "{dir}" and "{state}" are replaced in it too
	// (PORT={port}).
	Env []string
	// Ready probes the service at addr and returns nil once it answers.
	// It is called every 20 ms until it succeeds or StartTimeout passes.
	Ready func(ctx context.Context, addr string) error
	// ReadyPid, when set, is used instead of Ready: it may also look at
	// the build's process (pid), from outside (see InEventLoop).
	ReadyPid func(ctx context.Context, addr string, pid int) error
	// Shutdown asks the service at addr to exit, gently. Nil: go straight
	// to SIGTERM.
	Shutdown func(addr string)
	// StartTimeout bounds start-up; zero means 10 s.
	StartTimeout time.Duration
	// Dir is where the fresh directory is made; "" means os.TempDir().
	Dir string
	// DataFile is the name under which Launch.Data goes into the fresh
	// directory, for the build to load at start-up; "" when the build
	// cannot be given one (Launch.Data is then an error).
	DataFile string
}

// StateDir is the name of the copy of Launch.State in a build's fresh
// directory: what "{state}" names.
const StateDir = "state"

// statePlaceholder names the build's copy of its state directory in its
// arguments and environment.
const statePlaceholder = "{state}"

// Spawned is a build started by Spawn. It implements Process.
type Spawned struct {
	cmd  *exec.Cmd
	addr string
	dir  string
	log  *tailBuffer
	stop func(addr string)
	done chan struct{} // closed when the process has exited
	exit *kavach.Exit  // set before done is closed
	// owner is the OwnerEnv value of every process the build starts.
	owner string
	// reserved holds the build's port in Kavach's network while the build
	// runs in a namespace of its own (reservePort); -1 if none.
	reserved int
	// shared: the build runs in Kavach's network (see Isolation).
	shared bool

	stopOnce sync.Once
	// keep, when set before Stop, receives a copy of the build's state
	// directory once the build is gone, before its directory is removed
	// (SaveState); kept is the copy's error.
	keepMu   sync.Mutex
	keep     string
	kept     error
	keptDone bool
	// reap is held while the group is signalled and while the leader is
	// reaped: a signal never reaches a group id that was given away.
	reap   sync.Mutex
	reaped bool
}

// StartError is a build that did not become ready: it exited, or never answered.
type StartError struct {
	Path   string
	Reason string
	Exit   *kavach.Exit // the evidence
}

func (e *StartError) Error() string {
	msg := fmt.Sprintf("build %s %s", e.Path, e.Reason)
	if e.Exit != nil {
		msg += " (" + e.Exit.String() + ")"
		if t := strings.TrimSpace(e.Exit.LogTail); t != "" {
			msg += "\n--- last lines of its output ---\n" + t
		}
	}
	return msg
}

// waitDelay bounds how long Wait waits for the build's output after its
// process has exited, or after a cancelled start or life asked it to stop
// (Stop's own steps take up to 4 s): then the process is killed and its
// output closed.
const waitDelay = 6 * time.Second

// portRetries is how many times Start tries another port when the build
// could not listen on the one it was given (another process took the
// free port between FreePort and the build's bind).
const portRetries = 3

// Start starts the build, waits until it is ready, and returns it. On any
// error no process is left behind and the directory is removed. A build
// that exits at start-up saying its port is in use is started again on
// another port, up to portRetries times. ctx bounds the start, and the
// build's life: once it is done, the build is stopped (SIGTERM to its
// process group, then SIGKILL), and a start in progress returns its error.
func (s Spawn) Start(ctx context.Context) (*Spawned, error) {
	for try := 1; ; try++ {
		p, err := s.start(ctx)
		var se *StartError
		if try < portRetries && errors.As(err, &se) && se.Exit != nil && portTaken(se.Exit.LogTail) {
			continue
		}
		return p, err
	}
}

// portTaken reports whether a build's output says it could not listen.
func portTaken(log string) bool {
	l := strings.ToLower(log)
	return strings.Contains(l, "address already in use") || strings.Contains(l, "failed listening on port") || strings.Contains(l, "addrinuse")
}

// start is one try of Start: the build's executable checked, its
// directory and port made, its process started, and its readiness
// awaited.
func (s Spawn) start(ctx context.Context) (*Spawned, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("build %s: not started: %w", s.Launch.Path, context.Cause(ctx))
	}
	path, err := executable(s.Launch.Path)
	if err != nil {
		return nil, err
	}
	if s.Launch.State == "" && s.namesState() {
		return nil, &StartError{Path: path, Reason: "cannot be started: its arguments name {state}, but it was given no state directory (record with --state-dir DIR)"}
	}
	Sweep()
	Subreaper()
	dir, err := os.MkdirTemp(s.Dir, DirPattern("build"))
	if err != nil {
		return nil, fmt.Errorf("build %s: fresh directory: %w", path, err)
	}
	if err := s.seed(dir); err != nil {
		os.RemoveAll(dir)
		return nil, &StartError{Path: path, Reason: "cannot be started: " + err.Error()}
	}
	if err := s.copyState(dir); err != nil {
		os.RemoveAll(dir)
		return nil, &StartError{Path: path, Reason: "cannot be started: " + err.Error()}
	}
	isolated := Isolation() == "netns"
	p := &Spawned{owner: ownerValue(dir), reserved: -1}
	var port int
	if isolated {
		p.reserved, port, err = reservePort()
	} else {
		port, err = FreePort()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("build %s: %w", path, err)
	}
	s.command(ctx, p, path, dir, port, isolated)
	if err := p.startIn(isolated); err != nil {
		p.release()
		os.RemoveAll(dir)
		return nil, &StartError{Path: path, Reason: "cannot be started: " + err.Error()}
	}
	// Its process group, for the watcher to kill should Kavach die first.
	tellWatcher('+', p.cmd.Process.Pid)
	go p.wait()
	return s.awaitReady(ctx, p, path, port)
}

// executable resolves the path of a build's executable (the build runs in
// its fresh directory) and checks that it can be started.
func executable(path string) (string, error) {
	if !strings.Contains(path, "/") {
		if p, err := exec.LookPath(path); err == nil {
			path = p
		}
	}
	if p, err := filepath.Abs(path); err == nil {
		path = p
	}
	if st, err := os.Stat(path); err != nil {
		return "", &StartError{Path: path, Reason: "cannot be started: " + errors.Unwrap(err).Error()}
	} else if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", &StartError{Path: path, Reason: "cannot be started: not an executable file"}
	}
	return path, nil
}

// command makes p's command, not yet started: the build at path run in
// dir with its arguments ({port}, {dir} and {state} replaced), its
// environment and its process group, its output kept, stopped by Stop
// once ctx is done.
func (s Spawn) command(ctx context.Context, p *Spawned, path, dir string, port int, isolated bool) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	pairs := []string{"{port}", strconv.Itoa(port), "{dir}", dir}
	if s.Launch.State != "" {
		pairs = append(pairs, statePlaceholder, filepath.Join(dir, StateDir))
	}
	// One pass: a value put in is never replaced again.
	r := strings.NewReplacer(pairs...)
	expand := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = r.Replace(a)
		}
		return out
	}
	args := append(append(expand(s.Defaults), expand(s.Launch.Args)...), expand(s.Safety)...)
	if !isolated {
		p.shared = true
		if !TrustNetwork() {
			args = append(args, expand(s.Shared)...)
		}
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), expand(s.Env)...), expand(s.Launch.Env)...)
	// Marked, with what it forks, so that Stop (or, after a kill -9 of
	// Kavach, the next Kavach's Sweep) finds processes that left the group.
	cmd.Env = append(cmd.Env, OwnerEnv+"="+p.owner)
	// Its own process group, so Stop reaches everything it forks; and
	// killed with Kavach, so even a kill -9 of Kavach leaves no build behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.cmd, p.addr, p.dir, p.log, p.stop, p.done = cmd, addr, dir, newTailBuffer(64<<10), s.Shutdown, make(chan struct{})
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// ctx done: Stop, which signals the group only while its leader is
	// unreaped; not here, where Wait waits for this to return.
	cmd.Cancel = func() error {
		go p.Stop()
		return nil
	}
	// A process of the group that keeps the build's output open does not
	// hold Wait past this.
	cmd.WaitDelay = waitDelay
}

// awaitReady polls the started build p until it is ready, and stops it
// when it exits, its start times out or ctx is done first.
func (s Spawn) awaitReady(ctx context.Context, p *Spawned, path string, port int) (*Spawned, error) {
	timeout := s.StartTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ready, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Polled often at first, when a build is most likely to come up (a
	// replay starts one per variant, so every millisecond here counts),
	// then every 20 ms.
	pause := time.Millisecond
	for {
		probe, cancelProbe := context.WithTimeout(ready, 500*time.Millisecond)
		var err error
		if !Listening(p.cmd.Process.Pid, port) {
			// Not the build's yet: a probe now could reach another process
			// that took the port (the build then fails to bind, and is
			// started again on another), and call the build ready.
			err = fmt.Errorf("no process of the build listens on port %d", port)
		} else if s.ReadyPid != nil {
			err = s.ReadyPid(probe, p.addr, p.cmd.Process.Pid)
		} else {
			err = s.Ready(probe, p.addr)
		}
		cancelProbe()
		if err == nil {
			return p, nil
		}
		select {
		case <-p.done:
		case <-ready.Done():
		case <-time.After(pause):
			pause = min(2*pause, 20*time.Millisecond)
			continue
		}
		// The start was stopped (its context), the build exited, or its
		// time ran out; the first of these that holds is the reason.
		died := p.Exited() != nil
		exit := p.Stop()
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("build %s: start stopped: %w", path, context.Cause(ctx))
		case died:
			return nil, &StartError{Path: path, Reason: "exited during start-up", Exit: exit}
		default:
			return nil, &StartError{Path: path, Reason: fmt.Sprintf("never became ready within %s (last probe: %v)", timeout, err), Exit: exit}
		}
	}
}

// startIn starts the build's process: when isolated, in a network
// namespace of its own (forked from a thread inside it, its loopback up)
// registered under the build's address for Dial.
func (p *Spawned) startIn(isolated bool) error {
	if !isolated {
		return p.cmd.Start()
	}
	var err, nsErr error
	inNewNetns(func(ns int) {
		keep, derr := syscall.Dup(ns)
		if derr != nil {
			err = fmt.Errorf("network namespace: %w", derr)
			return
		}
		syscall.CloseOnExec(keep)
		if !register(p.addr, keep) {
			syscall.Close(keep)
			err = fmt.Errorf("address %s is another build's", p.addr)
			return
		}
		if err = p.cmd.Start(); err != nil {
			unregister(p.addr)
			p.release()
		}
	}, &nsErr)
	if nsErr != nil {
		return nsErr
	}
	return err
}

// release gives back the port reserved for the build.
func (p *Spawned) release() {
	if p.reserved >= 0 {
		syscall.Close(p.reserved)
		p.reserved = -1
	}
}

func (p *Spawned) wait() {
	// The leader's exit is seen before it is reaped: while it is a zombie
	// its pid, and so its process group id, cannot be given to another
	// process, so the group is killed here, and never later, when the id
	// may name someone else's build (pid_max is 32768 on small machines).
	waitExited(p.cmd.Process.Pid)
	p.reap.Lock()
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	err := p.cmd.Wait()
	p.reaped = true
	tellWatcher('-', p.cmd.Process.Pid)
	p.reap.Unlock()
	e := &kavach.Exit{Status: p.cmd.ProcessState.ExitCode(), LogTail: p.log.String(), Notable: p.log.notable()}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = unix(ws.Signal())
	}
	if err != nil && e.Status == 0 && e.Signal == "" {
		e.Status = -1
	}
	p.exit = e
	close(p.done)
}

// InEventLoop reports whether a process of the tree rooted at pid has its
// main thread asleep in epoll_wait: a service that has finished starting
// and waits for work. It is read from /proc (the thread's wait channel),
// so the service sees nothing of it.
func InEventLoop(pid int) bool {
	for _, p := range ProcessTree(pid) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/wchan"); err == nil {
			switch string(b) {
			case "do_epoll_wait", "ep_poll", "do_epoll_pwait":
				return true
			}
		}
	}
	return false
}

// ProcessTree is the process pid and its descendants, pid first (at most
// 64), read from /proc: a build may be a script that runs the service.
func ProcessTree(pid int) []int { return processTree(pid, 64) }

// processTree is ProcessTree with the children of at most limit processes
// read.
func processTree(pid, limit int) []int {
	pids := []int{pid}
	for i := 0; i < len(pids) && i < limit; i++ {
		pids = append(pids, childPids(pids[i])...)
	}
	return pids
}

// childPids are the pids of process pid's children, from its threads'
// children files: a few files, whatever the number of processes on the
// machine.
func childPids(pid int) []int {
	var out []int
	for _, tid := range Threads(pid) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + tid + "/children")
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// waitExited blocks until process pid has exited, without reaping it
// (waitid with WNOWAIT).
func waitExited(pid int) {
	const (
		pPID    = 1          // P_PID
		wExited = 4          // WEXITED
		wNoWait = 0x01000000 // WNOWAIT
	)
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// unix names a signal the way people write it: SIGSEGV.
func unix(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT", syscall.SIGKILL: "SIGKILL",
		syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGBUS: "SIGBUS",
		syscall.SIGFPE: "SIGFPE", syscall.SIGILL: "SIGILL", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGHUP: "SIGHUP", syscall.SIGPIPE: "SIGPIPE",
	}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// Addr is the loopback address the build listens on.
func (p *Spawned) Addr() string { return p.addr }

// Shared reports whether the build runs in Kavach's network rather than
// a namespace of its own (Isolation, read when it started).
func (p *Spawned) Shared() bool { return p.shared }

// Pid is the build's process id (and process group id).
func (p *Spawned) Pid() int { return p.cmd.Process.Pid }

// Dir is the build's fresh directory, removed by Stop.
func (p *Spawned) Dir() string { return p.dir }

// Done is closed when the process has exited.
func (p *Spawned) Done() <-chan struct{} { return p.done }

// Exited returns the exit evidence once the process has exited, else nil.
func (p *Spawned) Exited() *kavach.Exit {
	select {
	case <-p.done:
		return p.exit
	default:
		return nil
	}
}

// LogTail is the last few KiB the build wrote to stdout and stderr.
func (p *Spawned) LogTail() string { return p.log.String() }

// Stop asks the service to shut down, then sends SIGTERM to its process
// group, then SIGKILL, waiting up to 2 s between each, and removes its
// directory. It returns the exit evidence and is safe to call more than once.
func (p *Spawned) Stop() *kavach.Exit {
	p.stopOnce.Do(func() {
		pgid := p.cmd.Process.Pid
		var steps []func()
		if p.stop != nil {
			steps = append(steps, func() { p.stop(p.addr) })
		}
		steps = append(steps,
			// SIGCONT: a stopped build (SIGSTOP) handles its SIGTERM.
			func() { syscall.Kill(-pgid, syscall.SIGTERM); syscall.Kill(-pgid, syscall.SIGCONT) },
			func() { syscall.Kill(-pgid, syscall.SIGKILL) })
		for _, step := range steps {
			p.reap.Lock()
			if p.reaped {
				p.reap.Unlock()
				break
			}
			step()
			p.reap.Unlock()
			select {
			case <-p.done:
			case <-time.After(2 * time.Second):
			}
		}
		<-p.done // and with the leader, its group (wait)
		unregister(p.addr)
		p.release()
		// And what left the group (setsid, a daemon's double fork).
		killAndReap(p.owner, pgid, pgid)
		p.keepMu.Lock()
		if p.keep != "" {
			p.kept, p.keptDone = copyTree(filepath.Join(p.dir, StateDir), p.keep), true
		}
		p.keepMu.Unlock()
		os.RemoveAll(p.dir)
		// libfaketime (which an older Kavach preloaded, and a build's own
		// wrapper still may) leaves its shared memory behind when a process
		// using it is killed, and a later process with the same pid then
		// fails to start: on every path, a failed start included.
		for _, name := range []string{"faketime_shm_", "sem.faketime_sem_"} {
			os.Remove(filepath.Join("/dev/shm", name+strconv.Itoa(pgid)))
		}
	})
	return p.exit
}

var _ kavach.Process = (*Spawned)(nil)

// SaveState stops the build as Stop does, then copies its state
// directory ({state}, Launch.State's copy, as the build left it: what it
// wrote back on its way out included) to dst, a directory it makes: the
// state a later start of a build can be given (a replay's checkpoint,
// docs/replay.md). An error when the build was being stopped already, or
// was given no state directory.
func (p *Spawned) SaveState(dst string) error {
	p.keepMu.Lock()
	p.keep, p.kept, p.keptDone = dst, nil, false
	p.keepMu.Unlock()
	p.Stop()
	p.keepMu.Lock()
	defer p.keepMu.Unlock()
	if !p.keptDone {
		return fmt.Errorf("build %s was stopped before its state directory could be saved", p.cmd.Path)
	}
	if p.kept != nil {
		return fmt.Errorf("build %s: saving its state directory: %w", p.cmd.Path, p.kept)
	}
	return nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// lines returns the whole lines kept.
func (t *tailBuffer) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if len(t.buf) == t.max {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return strings.Split(strings.TrimRight(s, "\n"), "\n")
}

// String returns the last 20 lines kept.
func (t *tailBuffer) String() string {
	lines := t.lines()
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// notableWords mark the lines of a build's output that say what went wrong.
var notableWords = []string{"assert", "is not true", "panic", "fatal", "crashed by signal", "segmentation fault", "error:"}

// notable returns up to 8 lines that say what went wrong, in order.
func (t *tailBuffer) notable() []string {
	var out []string
	for _, l := range t.lines() {
		lower := strings.ToLower(l)
		for _, w := range notableWords {
			if strings.Contains(lower, w) {
				out = append(out, strings.TrimSpace(l))
				break
			}
		}
		if len(out) == 8 {
			break
		}
	}
	return out
}

// seed puts Launch.Data into dir under DataFile: a hard link where the
// file system allows one (the build may rewrite its data file, and a link
// is replaced, never written through, by a service that saves to a
// temporary file and renames it), else a copy.
func (s Spawn) seed(dir string) error {
	if s.Launch.Data == "" {
		return nil
	}
	if s.DataFile == "" {
		return fmt.Errorf("the build cannot be started from a data file (%s)", s.Launch.Data)
	}
	dst := filepath.Join(dir, s.DataFile)
	if os.Link(s.Launch.Data, dst) == nil {
		return nil
	}
	in, err := os.Open(s.Launch.Data)
	if err != nil {
		return fmt.Errorf("data file: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("data file: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("data file %s: %w", s.Launch.Data, err)
	}
	return out.Close()
}

// namesState reports whether the build's arguments or environment name
// {state}.
func (s Spawn) namesState() bool {
	for _, list := range [][]string{s.Defaults, s.Launch.Args, s.Safety, s.Shared, s.Env, s.Launch.Env} {
		for _, a := range list {
			if strings.Contains(a, statePlaceholder) {
				return true
			}
		}
	}
	return false
}

// copyState copies Launch.State into dir as StateDir: the build's own
// copy, which it may change; the original is never written. Regular files
// and directories only (their permission bits and modification times
// kept); anything else is refused.
func (s Spawn) copyState(dir string) error {
	if s.Launch.State == "" {
		return nil
	}
	return copyTree(s.Launch.State, filepath.Join(dir, StateDir))
}

// copyTree copies the state directory src to dst, which it makes:
// regular files and directories only (their permission bits and
// modification times kept); anything else is refused.
func copyTree(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("state directory %s: not a directory", src)
	}
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, info.Mode().Perm()|0o700); err != nil {
				return fmt.Errorf("state directory: %w", err)
			}
			return nil
		case d.Type().IsRegular():
			if err := copyFile(p, to, info); err != nil {
				return fmt.Errorf("state directory %s: %w", src, err)
			}
			return nil
		default:
			return fmt.Errorf("state directory %s: %s is not a regular file or a directory (%s)", src, rel, d.Type())
		}
	})
}

// copyFile copies the regular file from to a new file to, with info's
// permission bits and modification time.
func copyFile(from, to string, info os.FileInfo) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm()|0o400)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(to, info.ModTime(), info.ModTime())
}
