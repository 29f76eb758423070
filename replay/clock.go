package replay

import (
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// LibFaketime is where Debian's libfaketime package puts the library.
const LibFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

// Clock is the virtual clock of one build process: a libfaketime
// timestamp file that the build re-reads on every clock call
// (FAKETIME_NO_CACHE=1). Set writes the file to a temporary name and
// renames it into place, because a half-written file kills the build and
// a missing one silently gives real time (docs/replay.md). The monotonic clock
// is left real (FAKETIME_DONT_FAKE_MONOTONIC=1): faking it freezes event
// loops. docs/replay.md has the measurements behind these choices.
type Clock struct {
	path string
	now  time.Time // last time set
	next time.Time // the time written ahead to path+".next" (Prepare); zero: none
}

// NewClock makes a clock whose file lives in dir, set to start.
func NewClock(dir string, start time.Time) (*Clock, error) {
	c := &Clock{path: filepath.Join(dir, "kavach-faketime")}
	if err := c.Set(start); err != nil {
		return nil, err
	}
	return c, nil
}

// Env is the environment that makes a build read this clock.
func (c *Clock) Env() []string {
	return []string{
		"LD_PRELOAD=" + LibFaketime,
		"FAKETIME_TIMESTAMP_FILE=" + c.path,
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
		"TZ=UTC",
	}
}

// Now is the time last set.
func (c *Clock) Now() time.Time { return c.now }

// Set freezes the build's clock at t, in whole milliseconds (UTC). The
// clock moves in milliseconds because that is what services keep time in
// (Redis expiry, stream ids), and the recorded offset of a request is only
// known to within the proxy's latency anyway; steps closer than that share
// a time, and the file is not written again for them (it was the
// replay's main cost: bench/replay.sh).
func (c *Clock) Set(t time.Time) error {
	t = t.UTC().Truncate(time.Millisecond)
	if t.Equal(c.now) {
		return nil
	}
	if !c.next.IsZero() && t.Equal(c.next) {
		c.next = time.Time{}
		if err := os.Rename(c.path+".next", c.path); err != nil {
			return fmt.Errorf("set virtual clock: %w", err)
		}
		c.now = t
		return nil
	}
	if err := write(c.path+".tmp", t); err != nil {
		return err
	}
	if err := os.Rename(c.path+".tmp", c.path); err != nil {
		return fmt.Errorf("set virtual clock: %w", err)
	}
	c.now = t
	return nil
}

// Prepare writes t ahead, to a file of its own beside the clock's, so
// that a later Set(t) only renames it into place: the replay prepares the
// next request's time while the build works on the last one, and a move
// costs one rename instead of a file written and renamed (bench/README.md,
// "Part 3"). A Set to any other time writes it as usual; the file
// prepared is then left to the next Prepare.
func (c *Clock) Prepare(t time.Time) error {
	t = t.UTC().Truncate(time.Millisecond)
	if t.Equal(c.now) || t.Equal(c.next) {
		return nil
	}
	c.next = time.Time{}
	if err := write(c.path+".next", t); err != nil {
		return err
	}
	c.next = t
	return nil
}

// write writes the clock file's line for t to path.
func write(path string, t time.Time) error {
	// The middle of the millisecond: libfaketime reads the fraction as a
	// floating-point number, and "02.502000" comes out as 2.501999999 s,
	// a millisecond early for a service that keeps milliseconds (expiry,
	// PTTL). "02.502500" reads as 2.502499999 s: millisecond 502.
	line := t.Format("2006-01-02 15:04:05.000") + "500\n"
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		return fmt.Errorf("set virtual clock: %w", err)
	}
	return nil
}

// Fakeable says whether libfaketime can fake a build's clock, and if not,
// why: it must be a dynamically linked ELF executable (LD_PRELOAD needs
// the dynamic loader) that is not a Go program (Go reads the clock
// through the vDSO, not libc). Scripts (#!) are assumed fakeable: what
// they run inherits the environment.
func Fakeable(path string) (bool, string) {
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
		return false, "a statically linked binary: LD_PRELOAD does not apply"
	}
	if _, err := buildinfo.ReadFile(path); err == nil {
		return false, "a Go binary: it reads the clock without libc"
	}
	if _, err := os.Stat(LibFaketime); err != nil {
		return false, "libfaketime is not installed (" + LibFaketime + "; apt-get install libfaketime)"
	}
	return true, ""
}

// clockDir is where clock files go: /dev/shm when it is there and
// writable, since the build reads the file on every clock call and Set
// renames a new one into place before every step — on ext4 a rename costs
// about 450 µs (it starts writing the data back), on tmpfs about 20 µs
// (bench/replay.sh); else the temporary directory.
func clockDir() string {
	if f, err := os.CreateTemp("/dev/shm", ".kavach-probe-"); err == nil {
		f.Close()
		os.Remove(f.Name())
		return "/dev/shm"
	}
	return ""
}

// cleanShm removes what libfaketime leaves in /dev/shm when a process
// using it is killed; a later process with the same pid would fail to
// start (docs/replay.md).
func cleanShm(pid int) {
	for _, name := range []string{fmt.Sprintf("faketime_shm_%d", pid), fmt.Sprintf("sem.faketime_sem_%d", pid)} {
		os.Remove(filepath.Join("/dev/shm", name))
	}
}
