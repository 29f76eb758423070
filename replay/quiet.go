package replay

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kavach-dev/kavach/launch"
)

// A build is watched through /proc, never through its protocol: a request
// Kavach sent of its own would be counted by the service (command
// statistics, client lists) and change what later steps answer. Two
// things are read:
//
//   - whether any thread of the build's process tree is running or
//     runnable (state R, or D in the kernel): while one is, the build is
//     still working on what it was sent, however long the machine's load
//     makes that take; when none is, it has done all it will do until a
//     timer or a request wakes it;
//   - whether the process tree is still the processes it was (stands).
//
// Both are read from the process and its descendants (a build may be a
// script that runs the service). Whether the build took in a move of the
// virtual clock is not read here: the clock library says it (Clock.Turn).

// watch observes one build process tree.
type watch struct {
	pid   int
	cache *lookCache // files kept open for glance; nil: none
}

// tree is the pids of the process tree rooted at w.pid, the root first.
func (w watch) tree() []int { return launch.ProcessTree(w.pid) }

// busy reports whether a thread of the build is running or runnable.
func (w watch) busy() bool {
	busy, _ := w.look()
	return busy
}

// look reports whether a thread of the build is running or runnable, and
// whether one is stopped (by SIGSTOP or a tracer) while none runs.
//
// A build that is dying counts as running: a thread in its exit (the
// kernel's PF_EXITING, before it is a zombie) is still closing what it
// held, and a root process whose every thread has exited (a zombie, or
// already reaped) is waiting for Kavach to see its exit. Either way what
// comes next is the exit, which Kavach has not seen yet: on a loaded
// machine the readers of its connections and the waiter of its process
// can lag the kernel by a long moment, and a build taken as idle there
// was sent the next step as if it lived (TestFaults, crash mid-replay).
// A zombie child of the build is not counted: the build reaps it when it
// pleases (a fork reaped on the build's own timer).
func (w watch) look() (busy, stopped bool) {
	if w.pid <= 0 {
		return false, false
	}
	var t tally
	w.threads(func(root bool, stat []byte) bool {
		return len(stat) < 2 || !t.add(root, stat)
	})
	return t.result()
}

// tally judges a build's threads one stat line at a time, as look and
// glance both read them (look says why a dying build is busy).
type tally struct {
	rootThreads, rootGone int
	busy, stopped         bool
}

// add counts one thread's stat line (what follows the command), root
// when it is the root process's; it reports whether the build is
// already known to be busy.
func (t *tally) add(root bool, stat []byte) bool {
	state, flags := stateFlags(stat)
	if root {
		t.rootThreads++
	}
	switch state {
	case 'R', 'D':
		t.busy = true
	case 'Z', 'X', 'x':
		if root {
			t.rootGone++
		}
		return false
	case 'T', 't':
		t.stopped = true
	}
	if flags&pfExiting != 0 {
		t.busy = true
	}
	return t.busy
}

// result is the build busy (a thread running or in its exit, or every
// thread of the root exited, or the root reaped) and, when not, stopped.
func (t *tally) result() (busy, stopped bool) {
	busy = t.busy || t.rootGone == t.rootThreads
	return busy, !busy && t.stopped
}

// stateFlags reads the state and the kernel flags from what follows the
// command in a /proc stat line (" S 1 2 3 4 5 FLAGS ..."), without
// allocating: look runs before a reply is given up on.
func stateFlags(stat []byte) (state byte, flags uint64) {
	field := -1
	for i := 0; i < len(stat); i++ {
		if stat[i] == ' ' {
			continue
		}
		field++
		j := i
		for j < len(stat) && stat[j] != ' ' {
			j++
		}
		switch field {
		case 0:
			state = stat[i]
		case 6:
			for _, c := range stat[i:j] {
				if c < '0' || c > '9' {
					return state, 0
				}
				flags = flags*10 + uint64(c-'0')
			}
			return state, flags
		}
		i = j
	}
	return state, 0
}

// cpu is the processor time the build's threads have used so far, user
// and system, to the kernel's tick (10 ms): a build that used much of it
// while not answering is working on something long, not waiting for the
// machine (a starved build uses none).
func (w watch) cpu() time.Duration {
	var ticks int64
	w.threads(func(_ bool, stat []byte) bool {
		// After the command: state is field 3, utime 14, stime 15.
		f := strings.Fields(string(stat))
		if len(f) >= 13 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
		return true
	})
	return time.Duration(ticks) * time.Second / userHZ
}

// threads calls fn with what follows the command in each of the build's
// threads' /proc stat lines (" S 1 ..."), and whether the thread is the
// root process's, until fn returns false.
func (w watch) threads(fn func(root bool, stat []byte) bool) {
	if w.pid <= 0 {
		return
	}
	for _, pid := range w.tree() {
		for _, tid := range launch.Threads(pid) {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + tid + "/stat")
			if err != nil {
				continue
			}
			i := bytes.LastIndexByte(b, ')')
			if i < 0 {
				continue
			}
			if !fn(pid == w.pid, b[i+1:]) {
				return
			}
		}
	}
}

// userHZ is the unit of the times in /proc/*/stat (USER_HZ: 100 on Linux,
// whatever the kernel's own tick).
const userHZ = 100

// members is the tree's pids, sorted.
func (w watch) members() []int {
	if w.pid <= 0 {
		return nil
	}
	t := w.tree()
	slices.Sort(t)
	return t
}

// pfExiting is the kernel's flag of a task in its exit (PF_EXITING, set
// before the task's files, sockets among them, are closed).
const pfExiting = 0x4

// stands reports whether the tree is still exactly the processes in want
// (sorted), every thread of them there, none of them exiting or a zombie.
func (w watch) stands(want []int) bool {
	if !slices.Equal(w.members(), want) {
		return false
	}
	for _, pid := range want {
		tids := launch.Threads(pid)
		if len(tids) == 0 {
			return false
		}
		for _, tid := range tids {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + tid + "/stat")
			if err != nil {
				return false
			}
			i := bytes.LastIndexByte(b, ')')
			if i < 0 {
				return false
			}
			f := strings.Fields(string(b[i+1:]))
			if len(f) < 7 {
				return false
			}
			switch f[0] {
			case "Z", "X", "x":
				return false
			}
			flags, err := strconv.ParseUint(f[6], 10, 64)
			if err != nil || flags&pfExiting != 0 {
				return false
			}
		}
	}
	return true
}

// glance is look, kept cheap enough to run before every clock move
// (docs/replay.md, "What a move costs"): the /proc files of the build's
// threads are kept open between calls and read again in place, instead
// of the tree being walked and every file opened each time (about a
// quarter of the system calls). Whenever the tree may have changed — a
// process's thread count or a thread's children differ from when the
// files were opened, or a file cannot be read — it opens them again and
// falls back to look.
func (w watch) glance() (busy, stopped bool) {
	if w.pid <= 0 || w.cache == nil {
		return w.look()
	}
	if busy, stopped, ok := w.cache.read(); ok {
		return busy, stopped
	}
	w.cache.open(w)
	return w.look()
}

// lookCache holds the open /proc files of one build's threads.
type lookCache struct {
	procs []cachedProc
	buf   []byte
}

type cachedProc struct {
	stat     *os.File   // /proc/PID/stat: the thread count
	threads  []*os.File // /proc/PID/task/TID/stat
	children []*os.File // /proc/PID/task/TID/children
	kids     []string   // what each children file held when opened
}

// open (re)opens the files of w's tree.
func (c *lookCache) open(w watch) {
	c.close()
	for _, pid := range w.tree() {
		p := "/proc/" + strconv.Itoa(pid)
		cp := cachedProc{}
		var err error
		if cp.stat, err = os.Open(p + "/stat"); err != nil {
			c.close()
			return
		}
		c.procs = append(c.procs, cp)
		last := &c.procs[len(c.procs)-1]
		for _, tid := range launch.Threads(pid) {
			s, err1 := os.Open(p + "/task/" + tid + "/stat")
			k, err2 := os.Open(p + "/task/" + tid + "/children")
			if err1 != nil || err2 != nil {
				for _, f := range []*os.File{s, k} {
					if f != nil {
						f.Close()
					}
				}
				c.close()
				return
			}
			last.threads = append(last.threads, s)
			last.children = append(last.children, k)
			b, _ := c.pread(k)
			last.kids = append(last.kids, string(b))
		}
	}
}

// read reports what look would, from the open files; ok is false when
// they no longer describe the tree.
func (c *lookCache) read() (busy, stopped, ok bool) {
	if len(c.procs) == 0 {
		return false, false, false
	}
	for _, p := range c.procs {
		b, err := c.pread(p.stat)
		if err != nil {
			return false, false, false
		}
		f := statFields(b)
		if len(f) < 18 || f[17] != strconv.Itoa(len(p.threads)) {
			return false, false, false
		}
		for i, k := range p.children {
			b, err := c.pread(k)
			if err != nil || string(b) != p.kids[i] {
				return false, false, false
			}
		}
	}
	var tl tally
	for i, p := range c.procs {
		for _, t := range p.threads {
			b, err := c.pread(t)
			if err != nil {
				return false, false, false
			}
			at := bytes.LastIndexByte(b, ')')
			if at < 0 || len(b) < at+3 {
				return false, false, false
			}
			if tl.add(i == 0, b[at+1:]) {
				return true, false, true
			}
		}
	}
	busy, stopped = tl.result()
	return busy, stopped, true
}

// pread reads a /proc file from its start into c's buffer.
func (c *lookCache) pread(f *os.File) ([]byte, error) {
	if c.buf == nil {
		c.buf = make([]byte, 4096)
	}
	n, err := f.ReadAt(c.buf, 0)
	if n > 0 && (err == nil || err == io.EOF) {
		return c.buf[:n], nil
	}
	if n == 0 && err == io.EOF {
		return nil, nil // an empty file (no children)
	}
	return nil, err
}

// statFields are the fields of a stat line after the command name.
func statFields(b []byte) []string {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

func (c *lookCache) close() {
	for _, p := range c.procs {
		p.stat.Close()
		for _, f := range p.threads {
			f.Close()
		}
		for _, f := range p.children {
			f.Close()
		}
	}
	c.procs = nil
}
