package launch

import (
	"bufio"
	"errors"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A kill -9 of Kavach gives it no moment to stop its builds, and the
// kernel stops only the build's leader with it (its parent-death signal):
// a wrapper script's server, a setsid child or a double fork runs on,
// re-parented to init. So every Kavach that starts a build has a watcher:
// a copy of its own executable (/proc/self/exe, in a hidden mode chosen
// by its arguments, in this package's init) that holds the read end of a
// pipe whose only write end is Kavach's. However Kavach ends (exit, panic,
// SIGKILL, the OOM killer), the kernel closes its files, and the watcher
// reads end of file at once. It then stops and kills every process of
// Kavach's builds (victims), removes the directories named for Kavach (as
// Sweep would), and exits.
//
// It finds them by what each build's processes keep, whatever they do:
// the build's process group (Kavach writes "+PGID" down the pipe when a
// build starts and "-PGID" once its leader is reaped); the build's network
// namespace, where it has one of its own; Kavach's OwnerEnv mark; and,
// for a process that left its group and lost its mark (a setsid server
// that rewrites its environment for its process title, as Redis does),
// Kavach's process tree read while a build runs (every 100 ms, sooner
// just after a start): Kavach is the subreaper of what its builds fork, so
// everything they fork is in that tree while Kavach lives, and what was
// seen there (pid and start time) is killed with the sessions and groups
// it leads. What it saw is also written down (seenPrefix), for the next
// Kavach's Sweep should the watcher be killed with Kavach.
//
// The watcher is nobody's parent: the builds are started as before (same
// parent, argv, environment, directory, output, process group), their
// process tree in /proc holds nothing of it (the replay reads that tree to
// tell a busy build from an idle one), and their exits are seen by Kavach
// as before. It is not Kavach's child either: an intermediate copy starts
// it and exits, before Kavach makes itself the child subreaper, so it is
// re-parented to init (a process that lists Kavach's children sees only
// builds), in a session of its own (a Ctrl-C or a hang-up meant for
// Kavach's terminal does not reach it). One watcher per Kavach, not one
// guard per build: a start of Kavach's executable costs tens of
// milliseconds, which a replay would pay for every variant. Sweep, at the
// next Kavach's first build, remains for what the watcher could not do (it
// was killed too, or could not start).

// watchName is the watcher's argv[0]; its argv[1] is one of the modes
// below and argv[2] the owner value ("pid:start") of the Kavach watched.
const (
	watchName   = "kavach-watch"
	watchDetach = "detach" // the intermediate: starts the watcher, exits
	watchRun    = "watch"  // the watcher
)

// watchPipeFD is the pipe's read end in the intermediate and the watcher.
const watchPipeFD = 3

// watchLimit bounds how long the watcher keeps killing (a process forking
// as fast as it is killed).
const watchLimit = 5 * time.Second

func init() {
	if len(os.Args) != 3 || os.Args[0] != watchName || !isPipe(watchPipeFD) {
		return
	}
	switch os.Args[1] {
	case watchDetach:
		os.Exit(detachWatcher(os.Args[2]))
	case watchRun:
		os.Exit(runWatcher(os.Args[2]))
	}
}

// isPipe reports whether fd is open on a pipe.
func isPipe(fd int) bool {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
}

// watcher starts this process's watcher, once, and returns the write end
// of its pipe (-1 if it could not be started: Sweep is then the only
// remedy after a kill -9). Subreaper calls it first.
var watcher = sync.OnceValue(startWatcher)

func startWatcher() int {
	self := owner()
	if self == "" {
		return -1
	}
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return -1
	}
	r := os.NewFile(uintptr(fds[0]), "watch")
	defer r.Close()
	cmd := exec.Command("/proc/self/exe", watchDetach, self)
	cmd.Args[0] = watchName
	// Nothing of Kavach's environment but where its temporary files are
	// (in particular no OwnerEnv, which would make the watcher a build's),
	// and no hold on its working directory.
	tmp, err := filepath.Abs(os.TempDir())
	if err != nil {
		return -1
	}
	cmd.Env, cmd.Dir = []string{"TMPDIR=" + tmp}, "/"
	cmd.ExtraFiles = []*os.File{r} // watchPipeFD
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Run waits for the intermediate: once it has exited, the watcher is
	// init's child, and Kavach may become the subreaper.
	if err := cmd.Run(); err != nil {
		syscall.Close(fds[1])
		return -1
	}
	// A build's start never waits on the watcher: a message that does not
	// fit is dropped (the marks remain).
	syscall.SetNonblock(fds[1], true)
	return fds[1]
}

// tellWatcher writes "+PGID" (a build's process group, started) or
// "-PGID" (its leader reaped) to the watcher.
func tellWatcher(sign byte, pgid int) {
	if fd := watcher(); fd >= 0 {
		syscall.Write(fd, []byte(string(sign)+strconv.Itoa(pgid)+"\n"))
	}
}

// detachWatcher is the intermediate: it starts the watcher in a session
// of its own, handing on the pipe, and exits.
func detachWatcher(self string) int {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 1
	}
	_, err = os.StartProcess("/proc/self/exe", []string{watchName, watchRun, self}, &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{null, null, null, os.NewFile(watchPipeFD, "watch")},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return 1
	}
	return 0
}

// lookEvery is how often the watcher reads Kavach's process tree while a
// build runs; just after a build starts (when it forks most) it reads it
// sooner, from lookFirst on, doubling.
const (
	lookEvery = 100 * time.Millisecond
	lookFirst = 5 * time.Millisecond
)

// runWatcher is the watcher of the Kavach whose owner value is self: it
// follows the builds until the pipe ends, then kills what is left of them.
func runWatcher(self string) int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	w := newWatchState(self)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.NewFile(watchPipeFD, "watch"))
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	pause := lookEvery
	timer := time.NewTimer(pause)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				// End of file: Kavach is gone, however it went.
				w.finish(watchLimit)
				// Its directories, and libfaketime's files for its builds'
				// leaders.
				sweepFiles(func(pid int) bool {
					_, leader := w.groups[pid]
					return pid == w.kavach || leader
				})
				return 0
			}
			if w.message(line) {
				pause = lookFirst
				timer.Reset(pause)
			}
		case <-timer.C:
			if len(w.groups) > 0 {
				w.look()
				pause = min(2*pause, lookEvery)
				timer.Reset(pause)
			}
		}
	}
}

// watchState is what a watcher knows of the Kavach it watches.
type watchState struct {
	self   string // its owner value, "pid:start"
	kavach int    // its pid
	me     int    // the watcher's pid
	ownNet string // the network namespace the watcher (and Kavach) is in
	// groups are the builds' process groups Kavach named, each with its
	// leader's network namespace ("" when it is ownNet).
	groups map[int]string
	// seen are Kavach's descendants at the last look (pid: start time),
	// and the sessions and process groups they lead: what a build forked
	// that left its group and its mark (a setsid server that rewrites its
	// environment for its process title, as Redis does).
	seen     map[int]string
	sessions map[int]bool
	led      map[int]bool
}

func newWatchState(self string) *watchState {
	pidText, _, _ := strings.Cut(self, ":")
	kavach, _ := strconv.Atoi(pidText)
	return &watchState{self: self, kavach: kavach, me: os.Getpid(), ownNet: netOf(os.Getpid()), groups: map[int]string{}}
}

// netOf is the network namespace of process pid ("net:[INODE]"), "" if
// /proc does not say.
func netOf(pid int) string {
	ns, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	return ns
}

// message takes in a line from Kavach; it reports whether a build started.
func (w *watchState) message(line string) bool {
	if len(line) < 2 {
		return false
	}
	pgid, err := strconv.Atoi(line[1:])
	if err != nil || pgid <= 1 {
		return false
	}
	switch line[0] {
	case '+':
		// The leader's namespace now, while it runs: one of its own when
		// the build is isolated, and then everything in it is the build's.
		// Only one told from the watcher's own (never the machine's, which
		// a shared build is in).
		ns := netOf(pgid)
		if w.ownNet == "" || ns == w.ownNet {
			ns = ""
		}
		w.groups[pgid] = ns
		return true
	case '-':
		delete(w.groups, pgid)
	}
	return false
}

// look reads Kavach's process tree: while Kavach lives, every process a
// build forks is in it (Kavach is their subreaper). What it saw is
// written down (seenPrefix) whenever it changes, for the next Kavach's
// Sweep should the watcher be killed with Kavach.
//
// A look never forgets a process that still runs. Kavach may die while
// the watcher looks (its turn on a loaded machine comes when it comes,
// and the end of its pipe may be read only after): its tree is then
// empty, or part read, and a setsid server that Kavach's death
// re-parented to init would be forgotten just before it is to be killed.
// So a look made once Kavach is gone changes nothing, and what an earlier
// look saw stays while it runs (the same process: its start time); a
// process seen under a living subreaper stays in its tree until it ends.
func (w *watchState) look() {
	before := w.seen
	defer func() {
		if !maps.Equal(before, w.seen) {
			w.write()
		}
	}()
	seen, sessions, led := map[int]string{}, map[int]bool{}, map[int]bool{}
	add := func(st procStat) {
		seen[st.pid] = st.start
		if st.session == st.pid {
			sessions[st.pid] = true
		}
		if st.pgrp == st.pid {
			led[st.pid] = true
		}
	}
	tree := processTree(w.kavach, 4096)
	for _, pid := range tree[1:] {
		if st, ok := readStat(pid); ok && st.state != 'Z' {
			add(st)
		}
	}
	if !w.kavachLives() {
		return
	}
	for pid, start := range w.seen {
		if _, ok := seen[pid]; ok {
			continue
		}
		if st, ok := readStat(pid); ok && st.start == start && st.state != 'Z' {
			add(st)
		}
	}
	w.seen, w.sessions, w.led = seen, sessions, led
}

// kavachLives reports whether the Kavach watched still runs: the same
// process (its owner value), not yet exiting.
func (w *watchState) kavachLives() bool {
	st, ok := readStat(w.kavach)
	return ok && st.state != 'Z' && st.state != 'X' && strconv.Itoa(w.kavach)+":"+st.start == w.self
}

// seenPrefix names the file where a watcher writes down what it last saw
// of Kavach's process tree (seenPrefix+PID, PID Kavach's; a line "PID
// START" per process), in seenDir.
const seenPrefix = "kavach-watch-"

// seenDir is /dev/shm, where there is one (memory: nothing is written to
// a disk for it), else the temporary directory.
func seenDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && syscall.Access("/dev/shm", 2 /* W_OK */) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// write writes w.seen to its file, whole: a new file (never one another
// user put there) renamed into place.
func (w *watchState) write() {
	var b strings.Builder
	for pid, start := range w.seen {
		b.WriteString(strconv.Itoa(pid) + " " + start + "\n")
	}
	dir, name := seenDir(), seenPrefix+strconv.Itoa(w.kavach)
	f, err := os.CreateTemp(dir, name+"-*.tmp")
	if err != nil {
		return
	}
	_, err = f.WriteString(b.String())
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// killSeen kills the processes a watcher of a Kavach that is gone wrote
// down in file (each only if its start time is still the one written:
// the same process, not another given its pid).
func killSeen(file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		pidText, start, ok := strings.Cut(line, " ")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 1 {
			continue
		}
		if st, ok := readStat(pid); ok && st.start == start {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// finish kills what is left of Kavach's builds: first stopped (SIGSTOP),
// until no more are found, so that none forks or leaves its parent while
// the others are looked for; then killed, until none is left or limit has
// passed.
func (w *watchState) finish(limit time.Duration) {
	deadline := time.Now().Add(limit)
	stopped := map[int]bool{}
	for time.Now().Before(deadline) {
		grew := false
		for pid := range w.victims() {
			if !stopped[pid] {
				syscall.Kill(pid, syscall.SIGSTOP)
				stopped[pid], grew = true, true
			}
		}
		if !grew {
			break
		}
	}
	for pid := range stopped {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for {
		v := w.victims()
		if len(v) == 0 || time.Now().After(deadline) {
			return
		}
		for pid := range v {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// victims are the live processes of Kavach's builds: seen at the last
// look (the same process: its start time), marked with Kavach's owner
// value, in a build's process group, in a process group or session a
// process seen led, in an isolated build's network namespace; and their
// descendants.
func (w *watchState) victims() map[int]bool {
	procs := map[int]procStat{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == w.me || pid <= 1 {
			continue
		}
		if st, ok := readStat(pid); ok && st.state != 'Z' && st.state != 'X' {
			procs[pid] = st
		}
	}
	nets := map[string]bool{}
	for _, ns := range w.groups {
		if ns != "" {
			nets[ns] = true
		}
	}
	v := map[int]bool{}
	for pid, st := range procs {
		start, seen := w.seen[pid]
		_, group := w.groups[st.pgrp]
		if seen && start == st.start || group || w.led[st.pgrp] || w.sessions[st.session] ||
			len(nets) > 0 && nets[netOf(pid)] {
			v[pid] = true
		}
	}
	prefix := w.self + ":"
	for pid, value := range marked() {
		if _, live := procs[pid]; live && strings.HasPrefix(value, prefix) {
			v[pid] = true
		}
	}
	// What they forked, while it is still their child.
	for grew := true; grew; {
		grew = false
		for pid, st := range procs {
			if !v[pid] && v[st.ppid] {
				v[pid], grew = true, true
			}
		}
	}
	return v
}
