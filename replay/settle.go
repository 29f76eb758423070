package replay

import (
	"runtime"
	"time"
)

// at is the virtual time of a recorded offset.
func (r *runner) at(offset time.Duration) time.Time {
	return r.opts.Start.Add(offset).Add(r.shift).UTC()
}

// advance moves the virtual clock forward to t (or to wherever a clock
// variant's shift puts it, backwards included) and lets the build observe
// the move.
func (r *runner) advance(t time.Time) {
	if r.clock == nil {
		return
	}
	from := r.clock.Now()
	if !t.After(from) && !r.jump {
		// Time never runs backwards in a replay, except where a clock
		// variant turns it back: a reply that came later (in virtual
		// time) than recorded pushes what follows later too.
		return
	}
	if t.Truncate(time.Millisecond).Equal(from) {
		return
	}
	r.jump = false
	// What was sent is taken in at the time it was sent: a BLPOP read
	// after the move would count its timeout from the new time. Waiting
	// for the build to go idle is paid only where the move could be
	// observed before the next request carries it (docs/replay.md, "What
	// a move costs").
	blocked := r.blocked()
	if r.observable(from, t.UTC().Truncate(time.Millisecond), blocked) {
		r.quiesce()
	} else {
		r.finishing()
	}
	if err := r.clock.Set(t); err != nil {
		r.opts.Logger.Error("set clock", "err", err)
		return
	}
	r.settle(from, r.clock.Now(), blocked)
}

// observable reports whether the build could observe a clock move from
// one time to another other than through the next request it reads (a
// command reads the clock when it runs: Redis refreshes its cached time
// in call()). It could when something sent is not known to be done: a
// step waits for a reply (a blocked client's timeout counts from when
// the build took it in; one read after the move would count from the new
// time), or a request that no reply confirms (or a close) went out since
// the build was last idle; and when the move is settled (the service
// keeps time in a timer of its own, kavach.Abilities.Settle): the
// settling pulls the build's timer to run on the new time, which needs
// its event loop in its wait, not still on the last request. A
// perturbed replay settles every move, but waits before one only where
// a plain replay would. Otherwise every request
// sent has been answered, so it ran on the time it was sent at; what the
// build still does before it sleeps (pushes to another connection, say)
// is waited for without the idleness check's pauses (finishing).
func (r *runner) observable(from, to time.Time, blocked bool) bool {
	if !r.sent {
		return false // idle since it was last seen so, as before
	}
	if blocked || r.unconfirmed || r.watch.pid <= 0 {
		return true
	}
	return r.settleFn != nil && r.settleFn(from, to, blocked)
}

// finishing waits until the build has sent everything it will send until
// a timer or a request wakes it, and the replay has taken all of it
// (done), looking again whenever a reply comes or 50 µs pass. A build
// stopped meanwhile is left to quiesce, which decides its hang; one
// gone, an interrupted replay, or the step timeout of real time end the
// wait, and so does a build working on something long (workLong of its
// own processor time), as in quiesce: a script looping until a later
// step kills it sends nothing before that step, which waiting cannot
// bring (Redis's suite waited the step timeout, 5 s, at each of its four
// SCRIPT KILL and FUNCTION KILL tests: 20 s of a 31 s replay).
func (r *runner) finishing() {
	began := time.Now()
	long := r.long()
	for {
		done, stopped := r.done()
		if done {
			break
		}
		if stopped {
			r.quiesce()
			return
		}
		if r.proc.Exited() != nil || r.ctx.Err() != nil || time.Since(began) > r.opts.StepTimeout || long.done() {
			break
		}
		r.waitFine(50 * time.Microsecond)
	}
	r.sent = false
}

// done reports, in one look and without waiting, whether the build has
// sent everything it will send until a timer or a request wakes it, and
// the replay has taken all of it: no thread of it running, no byte
// unread on any connection, every framed reply attached; and whether
// the build is stopped.
func (r *runner) done() (done, stopped bool) {
	// The inline connection is read now, whatever poll would skip: this
	// look decides.
	read := false
	if r.inline != nil {
		r.readNow()
		read = r.inline != nil && r.inline.drained
	}
	r.poll()
	// With one connection open, whose replies all came, the build has
	// nowhere else to send anything: no need to look at it.
	if r.open() > 1 {
		if busy, stopped := r.watch.glance(); busy || stopped {
			return false, stopped && !busy
		}
	}
	n := r.frames.Load()
	if r.unread(read) || n != r.taken {
		return false, false
	}
	if !r.readers() {
		// Nothing is read but by the runner, which just looked.
		return true, false
	}
	// A reader that has just read bytes marks them only once its read
	// returns: give it the processor once, and look again.
	runtime.Gosched()
	return !r.unread(false) && r.frames.Load() == n, false
}

// settle lets the build observe a clock move before anything else is
// sent (docs/replay.md, "The clock library"): every thread whose wait the
// move ended (its deadline, published by the clock library, crossed) is
// woken, and the replay waits until each waits again on the new time.
// Where the integration says the build keeps time in a timer of its own
// (kavach.Abilities.Settle), that timer is made to run even when the
// move crossed none of its deadlines (Clock.Turn's pull). Nothing is read
// from /proc: the page says what the build waits for.
func (r *runner) settle(from, to time.Time, blocked bool) {
	if from.Equal(to) || r.clock == nil {
		return
	}
	need := r.settleFn != nil && r.settleFn(from, to, blocked)
	if r.rng != nil {
		// A perturbed replay: time passes between some moves as on a
		// loaded machine, and every move is settled.
		if r.rng.IntN(4) == 0 {
			pause(time.Duration(r.rng.IntN(2000)) * time.Microsecond)
		}
		need = r.settleFn != nil
	}
	r.clock.Turn(need, func() bool { return r.proc.Exited() != nil || r.ctx.Err() != nil }, min(r.opts.StepTimeout, 2*time.Second))
}

// quiesce waits, when requests were sent since the build was last seen
// idle, until it is idle again (or has worked for the step timeout, or is
// gone): everything it was sent has been read and handled.
func (r *runner) quiesce() {
	if !r.sent {
		return
	}
	began := time.Now()
	long := r.long()
	for !r.idle() {
		if r.proc.Exited() != nil || r.ctx.Err() != nil {
			break
		}
		if long.done() {
			// Working on something long (a script in a loop until a
			// later step kills it): the move goes ahead.
			break
		}
		if time.Since(began) > r.opts.StepTimeout {
			if _, stopped := r.watch.look(); stopped {
				// Stopped, not working: it hangs what waits on it, and
				// every later clock move would wait for it again.
				r.hung(r.unanswered(), r.outstandingSteps()...)
			}
			break
		}
		r.waitFine(100 * time.Microsecond)
	}
	r.sent, r.unconfirmed = false, false
}

// blocked reports whether a step is waiting for a reply.
func (r *runner) blocked() bool {
	for _, c := range r.order {
		if len(c.pending) > 0 {
			return true
		}
	}
	return false
}
