package replay

import (
	"time"

	"golang.org/x/sys/unix"
)

// fine is the longest pause that pause and wait take with the kernel's
// own timer rather than Go's. Go's timers fire on the netpoller's
// timeout, which is in whole milliseconds: on the machines Kavach is
// measured on, time.Sleep(100 µs) and a 100 µs time.Timer both took
// 1.1 ms, and nanosleep(100 µs) 0.17 ms (docs/replay.md, "Pauses").
// The replay's polling loops (is the build idle, has it turned its event
// loop) pause for 50 to 200 µs several times a clock move; at a
// millisecond each, the pauses, not the build, were what a perturbed
// replay spent its time on.
const fine = time.Millisecond

// pause sleeps for d of real time: below fine, in the kernel (the
// goroutine's thread sleeps, as in a system call), so that it lasts d
// and the timer slack, not a millisecond.
func pause(d time.Duration) {
	if d >= fine {
		time.Sleep(d)
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

// wait waits up to d of real time for a reader to frame a reply or end;
// it reports whether one did. It is for waits a reply is expected to
// end: Go's timer, a millisecond here whatever d, bounds only the wait
// for one that does not come.
func (r *runner) wait(d time.Duration) bool {
	if r.inline != nil {
		return r.waitInline(d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.wake:
		return true
	case <-t.C:
		return false
	}
}

// waitFine is wait for the polling loops, which look at the build again
// after d whether or not a reply came: below fine, the time is kept by
// pause, in a goroutine of its own, for the reason pause gives. (A reply
// awaited costs less with wait: a goroutine sleeping in the kernel for
// every reply slowed a replay of one request a millisecond by a fifth.)
func (r *runner) waitFine(d time.Duration) bool {
	if d >= fine {
		return r.wait(d)
	}
	if r.inline != nil {
		return r.pauseInline(d)
	}
	select {
	case <-r.wake:
		return true
	default:
	}
	done := make(chan struct{})
	go func() {
		pause(d)
		close(done)
	}()
	select {
	case <-r.wake:
		return true
	case <-done:
		return false
	}
}
