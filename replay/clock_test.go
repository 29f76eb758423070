package replay

import (
	"bufio"
	"fmt"

	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clockProbe is a program run under the clock library: "read" prints
// what each clock interface says, in this process, in a thread of it, in
// a forked child and after an exec; "wait KIND MS" waits MS ms of the
// clock through one of the waits the library takes over, prints the
// monotonic time it woke at, then waits with no end.
const clockProbe = `
#define _GNU_SOURCE
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long ns(clockid_t id) {
	struct timespec ts; clock_gettime(id, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void report(const char *who) {
	struct timeval tv; gettimeofday(&tv, NULL);
	printf("%s real=%lld mono=%lld coarse=%lld boot=%lld tv=%lld time=%lld\n", who,
		ns(CLOCK_REALTIME), ns(CLOCK_MONOTONIC), ns(CLOCK_REALTIME_COARSE), ns(CLOCK_BOOTTIME),
		(long long)tv.tv_sec * 1000000LL + tv.tv_usec, (long long)time(NULL));
	fflush(stdout);
}

static void *thread(void *a) { report("thread"); return a; }

int main(int argc, char **argv) {
	if (strcmp(argv[1], "read") == 0) {
		report("main");
		pthread_t t; pthread_create(&t, NULL, thread, NULL); pthread_join(t, NULL);
		pid_t c = fork();
		if (c == 0) { report("child"); _exit(0); }
		waitpid(c, NULL, 0);
		execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
		return 1;
	}
	if (strcmp(argv[1], "exec") == 0) { report("exec"); return 0; }
	int ms = atoi(argv[3]);
	const char *k = argv[2];
	printf("waiting\n"); fflush(stdout);
	if (strcmp(k, "epoll") == 0) {
		int ep = epoll_create1(0); struct epoll_event ev;
		while (epoll_wait(ep, &ev, 1, ms) != 0) {}
	} else if (strcmp(k, "poll") == 0) {
		poll(NULL, 0, ms);
	} else if (strcmp(k, "select") == 0) {
		struct timeval tv = {ms / 1000, (ms % 1000) * 1000}; select(0, NULL, NULL, NULL, &tv);
	} else if (strcmp(k, "nanosleep") == 0) {
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L}; nanosleep(&ts, NULL);
	} else if (strcmp(k, "usleep") == 0) {
		usleep(ms * 1000);
	} else if (strcmp(k, "abs") == 0) {
		struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += ms / 1000; ts.tv_nsec += (ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	printf("woke mono=%lld\n", ns(CLOCK_MONOTONIC)); fflush(stdout);
	poll(NULL, 0, -1);
	return 0;
}
`

// buildProbe compiles clockProbe, once per test binary.
func buildProbe(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "probe.c")
	if err := os.WriteFile(src, []byte(clockProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	if out, err := exec.Command("cc", "-O2", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return bin
}

func newTestClock(t *testing.T, start time.Time) (*Clock, string) {
	t.Helper()
	lib, err := ClockLibrary()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClock(t.TempDir(), start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, lib
}

// fields parses "who k=v k=v ..." lines.
func fields(t *testing.T, line string) (string, map[string]int64) {
	t.Helper()
	f := strings.Fields(line)
	m := map[string]int64{}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		m[k] = n
	}
	return f[0], m
}

// TestClockReads: every clock interface reads the page, and agrees with
// the others, in the process, a thread, a forked child and an exec'd
// program: the wall clocks at the time set (to the microsecond, the
// middle of its millisecond), the monotonic ones where the replay moved
// them, and a move of the wall clock back leaves the monotonic clock
// where it was.
func TestClockReads(t *testing.T) {
	probe := buildProbe(t)
	start := time.Date(2026, 3, 1, 10, 0, 2, 0, time.UTC)
	c, lib := newTestClock(t, start)
	c.Freeze()
	read := func(want time.Time, mono int64) {
		t.Helper()
		cmd := exec.Command(probe, "read")
		cmd.Env = append(os.Environ(), c.Env(lib)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 4 {
			t.Fatalf("probe printed %q", out)
		}
		for _, l := range lines {
			who, v := fields(t, l)
			real := want.Add(500 * time.Microsecond).UnixNano()
			if v["real"] != real || v["coarse"] != real || v["tv"] != real/1000 || v["time"] != want.Unix() {
				t.Errorf("%s: wall clocks %v, want %d ns", who, v, real)
			}
			if v["mono"] != mono || v["boot"] != mono {
				t.Errorf("%s: monotonic clocks %d, %d, want %d", who, v["mono"], v["boot"], mono)
			}
		}
	}
	mono := c.mono
	read(start, mono)
	c.Set(start.Add(1500 * time.Millisecond))
	read(start.Add(1500*time.Millisecond), mono+int64(1500*time.Millisecond))
	c.Set(start.Add(-24 * time.Hour)) // a clock variant turns it back
	read(start.Add(-24*time.Hour), mono+int64(1500*time.Millisecond))
	if !c.Loaded() {
		t.Error("Loaded is false after processes read the clock")
	}
}

// TestClockWaits: each wait the library takes over lasts its time on the
// virtual clock, whatever real time passes: a move that stops short of
// its deadline leaves it waiting (and Turn kicks nobody), the move that
// crosses it ends it, and Turn returns once the thread waits again.
func TestClockWaits(t *testing.T) {
	probe := buildProbe(t)
	for _, kind := range []string{"epoll", "poll", "select", "nanosleep", "usleep", "abs"} {
		t.Run(kind, func(t *testing.T) {
			start := time.Date(2026, 3, 1, 10, 0, 2, 0, time.UTC)
			c, lib := newTestClock(t, start)
			c.Freeze()
			cmd := exec.Command(probe, "wait", kind, "5000")
			cmd.Env = append(os.Environ(), c.Env(lib)...)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			lines := make(chan string, 4)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			if l := <-lines; l != "waiting" {
				t.Fatalf("probe: %q", l)
			}
			mono := c.mono
			waitFor(t, "a published deadline", func() bool { _, ok := c.earliest(true); return ok })
			if d, _ := c.earliest(true); d != mono+int64(5*time.Second) {
				t.Fatalf("deadline %d, want %d (now %d + 5 s)", d, mono+int64(5*time.Second), mono)
			}
			gone := func() bool { return false }
			c.Set(start.Add(4999 * time.Millisecond))
			if !c.Turn(false, gone, 10*time.Second) {
				t.Fatal("Turn gave up on a move that crossed no deadline")
			}
			select {
			case l := <-lines:
				t.Fatalf("woke before its virtual deadline: %q", l)
			case <-time.After(200 * time.Millisecond):
			}
			c.Set(start.Add(5 * time.Second))
			if !c.Turn(false, gone, 10*time.Second) {
				t.Fatal("Turn: the woken thread never waited again")
			}
			select {
			case l := <-lines:
				if want := fmt.Sprintf("woke mono=%d", mono+int64(5*time.Second)); l != want {
					t.Fatalf("%q, want %q", l, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("never woke after the move past its deadline")
			}
		})
	}
}

// TestClockPull: a settle that must run the build's timer moves the
// monotonic clock on to the earliest deadline, even when the wall clock's
// move crossed none, and only forward.
func TestClockPull(t *testing.T) {
	probe := buildProbe(t)
	start := time.Date(2026, 3, 1, 10, 0, 2, 0, time.UTC)
	c, lib := newTestClock(t, start)
	c.Freeze()
	cmd := exec.Command(probe, "wait", "epoll", "2")
	cmd.Env = append(os.Environ(), c.Env(lib)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	r := bufio.NewReader(out)
	r.ReadString('\n')
	waitFor(t, "a published deadline", func() bool { _, ok := c.Deadline(); return ok })
	want := c.mono + int64(2*time.Millisecond)
	c.Set(start.Add(time.Millisecond))
	if !c.Turn(true, func() bool { return false }, 10*time.Second) {
		t.Fatal("Turn with pull gave up")
	}
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != fmt.Sprintf("woke mono=%d", want) {
		t.Fatalf("%q %v, want woke at %d", line, err, want)
	}
	if c.mono != want || c.Now() != start.Add(time.Millisecond) {
		t.Fatalf("after the pull: monotonic %d (want %d), wall %v", c.mono, want, c.Now())
	}
}

// TestClockRefusesStatic: a statically linked binary cannot load the
// library; Fakeable says so, and why.
func TestClockRefusesStatic(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "s.c")
	os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644)
	bin := filepath.Join(dir, "s")
	if out, err := exec.Command("cc", "-static", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc -static: %v\n%s", err, out)
	}
	if ok, why := Fakeable(bin); ok || !strings.Contains(why, "statically linked") {
		t.Fatalf("Fakeable(static) = %v, %q", ok, why)
	}
}

// Fakeable's answer is remembered per file, and asked again of a file
// that changed: a script (fakeable) replaced by a static binary at the
// same path (not).
func TestFakeableAskedAgainOfAChangedFile(t *testing.T) {
	dir := t.TempDir()
	path, src := filepath.Join(dir, "build"), filepath.Join(dir, "s.c")
	os.WriteFile(path, []byte("#!/bin/sh\nexec sleep 1\n"), 0o755)
	if ok, why := Fakeable(path); !ok {
		t.Fatalf("a script: not fakeable: %s", why)
	}
	os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644)
	if out, err := exec.Command("cc", "-static", "-o", path+".new", src).CombinedOutput(); err != nil {
		t.Fatalf("cc -static: %v\n%s", err, out)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if ok, why := Fakeable(path); ok || !strings.Contains(why, "statically linked") {
		t.Errorf("the script replaced by a static binary: fakeable %v (%s), want refused", ok, why)
	}
}

// TestClockUsedSlots: a look at the page reads the slots up to the last
// one claimed, and finds a deadline in a slot after one that was freed.
func TestClockUsedSlots(t *testing.T) {
	c, err := NewClock(t.TempDir(), time.Date(2026, 3, 1, 10, 0, 2, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	claim := func(i int, deadline int64) {
		off := offSlots + i*slotSize
		c.u32(off + 8).Store(slotLoop)
		c.i64(off + 24).Store(deadline)
		c.i32(off + 4).Store(int32(100 + i))
		c.i32(off).Store(int32(1000 + i))
	}
	if n := c.used(); n != 0 {
		t.Fatalf("used %d of a fresh page", n)
	}
	claim(0, 900)
	claim(1, 800)
	claim(2, 700)
	if n := c.used(); n != 3 {
		t.Fatalf("used %d, want 3", n)
	}
	c.i32(offSlots + 1*slotSize).Store(0) // slot 1's thread gone, freed
	if n := c.used(); n != 3 {
		t.Fatalf("used %d after a slot before the last was freed, want 3", n)
	}
	if d, ok := c.earliest(false); !ok || d != 700 {
		t.Fatalf("earliest %d %v, want slot 2's 700", d, ok)
	}
	claim(3, 600)
	if d, ok := c.earliest(false); !ok || d != 600 || c.used() != 4 {
		t.Fatalf("earliest %d %v, used %d: want slot 3's 600, 4", d, ok, c.used())
	}
}
