package replay

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The clock page's layout (clocklib/kavachclock.c, struct page).
const (
	pageSize    = 4096
	pageMagic   = 0x3143564b // "KVC1"
	offSeq      = 8
	offReal     = 16
	offMono     = 24
	offMode     = 32
	offSigno    = 36
	offBase     = 40
	offLoaded   = 48
	offSlots    = 64
	slotSize    = 32
	slots       = 120
	slotRunning = 0
	slotLoop    = 1 // waiting in an event loop's wait (epoll, poll, select)
	slotSleep   = 2 // in a sleep (nanosleep and its kin)
)

// Clock is the virtual clock of one build: a page of shared memory that
// the replay writes and the build reads through the clock library
// (clocklib/kavachclock.c, preloaded into every process of the build):
// the virtual wall clock and the virtual monotonic clock, in nanoseconds,
// under a sequence counter, and the deadline of every wait of the build's
// threads. docs/replay.md ("The clock library") says why.
//
// One goroutine moves a clock: Set, Freeze, Run and Turn are not safe
// for concurrent use.
type Clock struct {
	path string
	mem  []byte
	now  time.Time // the wall clock, last set
	mono int64     // the monotonic clock (ns): it moves forward with the wall clock, never back
	// running: the monotonic clock runs with the real one (while the
	// build starts and stops)
	running bool
	// claimed is one past the highest slot seen claimed (used).
	claimed int
}

// NewClock makes a clock whose page lives in dir, its wall clock at start
// and running (Freeze stops it when the replay begins).
func NewClock(dir string, start time.Time) (*Clock, error) {
	path := filepath.Join(dir, "kavach-clock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("virtual clock: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(pageSize); err != nil {
		return nil, fmt.Errorf("virtual clock: %w", err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("virtual clock: map %s: %w", path, err)
	}
	c := &Clock{path: path, mem: mem, now: wall(start), mono: int64(time.Hour)}
	c.u64(offSeq).Store(2)
	c.i64(offReal).Store(c.now.UnixNano())
	c.i64(offMono).Store(c.mono)
	c.run()
	c.u32(0).Store(pageMagic) // last: the library maps only a page with its magic
	return c, nil
}

// wall is the virtual wall clock's reading for t: the middle of t's
// millisecond. Services keep time in milliseconds (Redis expiry, stream
// ids), and the recorded offset of a request is known only to within the
// proxy's latency; the middle keeps a reading in t's millisecond however
// the build rounds its microseconds (TIME shows 500 of them).
func wall(t time.Time) time.Time {
	return t.UTC().Truncate(time.Millisecond).Add(500 * time.Microsecond)
}

func (c *Clock) u32(off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&c.mem[off])) }
func (c *Clock) i32(off int) *atomic.Int32  { return (*atomic.Int32)(unsafe.Pointer(&c.mem[off])) }
func (c *Clock) u64(off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&c.mem[off])) }
func (c *Clock) i64(off int) *atomic.Int64  { return (*atomic.Int64)(unsafe.Pointer(&c.mem[off])) }

// write publishes a move: the sequence counter is odd while the fields
// change, so a reader never takes half of one.
func (c *Clock) write(fields func()) {
	c.u64(offSeq).Add(1)
	fields()
	c.u64(offSeq).Add(1)
}

// kernelMono is the kernel's monotonic clock, as the library reads it.
func kernelMono() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// run lets the monotonic clock run with the real one from where it is.
func (c *Clock) run() {
	c.write(func() {
		c.i64(offBase).Store(kernelMono())
		c.u32(offMode).Store(1)
	})
	c.running = true
}

// Freeze stops the monotonic clock where the running one has got to: from
// here on, both clocks move only with Set.
func (c *Clock) Freeze() {
	if !c.running {
		return
	}
	if d := kernelMono() - c.i64(offBase).Load(); d > 0 {
		c.mono += d
	}
	c.write(func() {
		c.i64(offMono).Store(c.mono)
		c.u32(offMode).Store(0)
	})
	c.running = false
}

// Release lets the monotonic clock run again, so that a build being
// stopped ends the sleeps and timers of its shutdown in real time.
func (c *Clock) Release() {
	if !c.running && c.mem != nil {
		c.run()
	}
}

// Close unmaps the page; the caller removes its directory.
func (c *Clock) Close() {
	if c.mem != nil {
		syscall.Munmap(c.mem)
		c.mem = nil
	}
}

// Env is the environment that makes a build read this clock.
func (c *Clock) Env(lib string) []string {
	return []string{"LD_PRELOAD=" + lib, "KAVACH_CLOCK=" + c.path, "TZ=UTC"}
}

// Loaded reports whether a process of the build has mapped the clock.
func (c *Clock) Loaded() bool { return c.u64(offLoaded).Load() > 0 }

// Now is the wall clock's time, to the millisecond.
func (c *Clock) Now() time.Time { return c.now.Truncate(time.Millisecond) }

// Set moves the wall clock to t, in whole milliseconds (steps closer than
// that share a time and cost no move), and the monotonic clock forward by
// as much (never back: a clock variant that turns the wall clock back
// leaves it where it is, as a real machine's clock set back would).
func (c *Clock) Set(t time.Time) error {
	t = wall(t)
	if t.Equal(c.now) {
		return nil
	}
	if d := t.Sub(c.now); d > 0 && !c.running {
		c.mono += int64(d)
	}
	c.now = t
	c.write(func() {
		c.i64(offReal).Store(t.UnixNano())
		c.i64(offMono).Store(c.mono)
	})
	return nil
}

// slot reads the wait slot i: its thread, process, state (slotRunning,
// slotLoop, slotSleep), waits entered, the sequence number it entered the
// last at, and its deadline.
func (c *Clock) slot(i int) (tid, pid int32, state uint32, gen uint32, seq uint64, deadline int64) {
	off := offSlots + i*slotSize
	tid = c.i32(off).Load()
	pid = c.i32(off + 4).Load()
	state = c.u32(off + 8).Load()
	gen = c.u32(off + 12).Load()
	seq = c.u64(off + 16).Load()
	deadline = c.i64(off + 24).Load()
	return
}

// used is how many slots, from the first, hold every thread that has
// claimed one. The library claims the first free slot, and a slot is
// freed only here (Turn, once its thread is gone): so a slot never seen
// claimed that is free still has every claimed slot before it. A look
// at the page, before every clock move, reads the few slots the build's
// threads use, not all 120.
func (c *Clock) used() int {
	for c.claimed < slots && c.i32(offSlots+c.claimed*slotSize).Load() != 0 {
		c.claimed++
	}
	return c.claimed
}

// Deadline is the earliest deadline an event loop of the build waits
// for, on the monotonic clock (its next timer), and whether any waits
// with one. Sleeps do not count: a sleep is not a timer to run.
func (c *Clock) Deadline() (int64, bool) { return c.earliest(false) }

// earliest is the earliest deadline of a wait, sleeps included or not.
func (c *Clock) earliest(sleeps bool) (int64, bool) {
	earliest := int64(math.MaxInt64)
	for i := range c.used() {
		tid, pid, state, _, _, d := c.slot(i)
		if tid != 0 && pid != 0 && (state == slotLoop || sleeps && state == slotSleep) && d < earliest {
			earliest = d
		}
	}
	return earliest, earliest != math.MaxInt64
}

// Turn settles the last move: each thread of the build whose wait the
// move ended (its deadline crossed) is woken, and Turn waits until every
// one of them has begun its next wait after the move, its deadline ahead
// of the clock: the build ran its timers on the new time and is idle
// again. A move that crossed no deadline costs one look at the page.
//
// With pull, the build's timer is made to run even if the move crossed
// no deadline: the monotonic clock is moved on to the earliest deadline
// of an event loop's wait (one timer period of the build at most; the
// wall clock stays; a sleep's deadline is never pulled to),
// for a service that refreshes what it caches of the wall clock only in
// its timer (kavach.Abilities.Settle).
//
// Turn gives up, reporting false, when gone reports the build gone or
// bound passes; the library not loaded (a kick signal never set) is true
// at once.
func (c *Clock) Turn(pull bool, gone func() bool, bound time.Duration) bool {
	signo := c.i32(offSigno).Load()
	if signo == 0 || c.running {
		return true
	}
	if pull {
		if d, ok := c.Deadline(); ok && d > c.mono {
			c.mono = d
			c.write(func() { c.i64(offMono).Store(c.mono) })
		}
	}
	seq := c.u64(offSeq).Load()
	type woken struct {
		i        int
		pid, tid int32
		gen      uint32
	}
	var wait []woken
	for i := range c.used() {
		tid, pid, state, gen, _, d := c.slot(i)
		if tid == 0 || pid == 0 || state == slotRunning || d > c.mono {
			continue
		}
		if err := syscall.Tgkill(int(pid), int(tid), syscall.Signal(signo)); errors.Is(err, syscall.ESRCH) {
			// The thread is gone: free its slot.
			c.i32(offSlots+i*slotSize).CompareAndSwap(tid, 0)
			continue
		}
		wait = append(wait, woken{i, pid, tid, gen})
	}
	began := time.Now()
	nap := time.Duration(0)
	for len(wait) > 0 {
		left := wait[:0]
		for _, w := range wait {
			tid, _, state, gen, entered, d := c.slot(w.i)
			if tid != w.tid || gen != w.gen && state != slotRunning && entered == seq && d > c.mono {
				continue // waiting again on the new time, or its slot freed
			}
			if err := syscall.Tgkill(int(w.pid), int(w.tid), 0); errors.Is(err, syscall.ESRCH) {
				continue // the thread ended
			}
			left = append(left, w)
		}
		wait = left
		if len(wait) == 0 {
			break
		}
		if gone() || time.Since(began) > bound {
			return false
		}
		if nap == 0 {
			runtime.Gosched()
			nap = 10 * time.Microsecond
			continue
		}
		pause(nap) // in the kernel: time.Sleep would take a millisecond (pause.go)
		nap = min(2*nap, 200*time.Microsecond)
	}
	return true
}

// Fakeable says whether the clock library can fake a build's clock, and if
// not, why: it must be a dynamically linked ELF executable (a preloaded
// library needs the dynamic loader) that is not a Go program (Go reads the
// clock through the vDSO, not libc). Scripts (#!) are taken as fakeable:
// what they run inherits the environment.
func Fakeable(path string) (bool, string) {
	// Asked once per replay, of the same few builds: remembered by the
	// file's identity (reading a build's sections for Go's build
	// information was 5% of a diff's processor time).
	st, err := os.Stat(path)
	if err != nil {
		return fakeable(path)
	}
	id := fileID{path: path, size: st.Size(), mtime: st.ModTime().UnixNano()}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(s.Dev), s.Ino
	}
	if v, ok := fakeables.Load(id); ok {
		a := v.(fakeAnswer)
		return a.ok, a.why
	}
	ok, why := fakeable(path)
	fakeables.Store(id, fakeAnswer{ok, why})
	return ok, why
}

// fileID tells a file from another, and from itself changed.
type fileID struct {
	path     string
	size     int64
	mtime    int64
	dev, ino uint64
}

type fakeAnswer struct {
	ok  bool
	why string
}

// fakeables are Fakeable's answers by file.
var fakeables sync.Map

// fakeable is Fakeable, asked of the file.
func fakeable(path string) (bool, string) {
	f, err := elf.Open(path)
	if err != nil {
		return true, "" // not ELF (a script): its interpreter's children get LD_PRELOAD
	}
	defer f.Close()
	dynamic := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			dynamic = true
		}
	}
	if !dynamic {
		return false, "a statically linked binary: no library can be preloaded into it, so its clock cannot be virtual"
	}
	if _, err := buildinfo.ReadFile(path); err == nil {
		return false, "a Go binary: it reads the clock without libc, so its clock cannot be virtual"
	}
	return true, ""
}

// clockDir is where clock pages go: /dev/shm when it is there and
// writable (the page is memory either way; a file there is never written
// back), else the temporary directory.
var clockDir = sync.OnceValue(func() string {
	if f, err := os.CreateTemp("/dev/shm", ".kavach-probe-"); err == nil {
		f.Close()
		os.Remove(f.Name())
		return "/dev/shm"
	}
	return ""
})
