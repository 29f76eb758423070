package replay

import (
	"bytes"

	"github.com/kavach-dev/kavach"
)

// process plays one event: it opens a connection, moves the clock to a
// reply's recorded time, or sends a request (or closes a connection) once
// its connection has the replies the recording had before it. A request
// whose connection still waits for one is held back with the rest of
// that connection's events, and the replay goes on with the others.
func (r *runner) process(i int) {
	e := *r.ev(i)
	ev := e.Event
	r.playing = ev.Offset
	if ev.Dir == kavach.Response && r.has(i+1) {
		// A reply is waited for up to the next event: the recording was
		// there before it played that.
		r.playing = r.ev(i + 1).Offset
	}
	switch {
	case ev.Dir == kavach.Open:
		r.dial(ev.Conn)
		return
	case ev.Dir == kavach.Response:
		r.response(i, e)
		return
	case ev.Dir == kavach.Close && string(ev.Data) != "client":
		// The recording saw the service close it (or the recording end):
		// let the build finish what it does with this connection's steps
		// before the next request, so that a build dying here is seen here
		// and not at another connection's next request.
		r.advance(r.at(ev.Offset))
		if c := r.conns[ev.Conn]; c != nil && string(ev.Data) == "server" {
			r.answered(c, c.finished+len(c.pending))
		}
		return
	case ev.Dir != kavach.Request && ev.Dir != kavach.Close:
		return
	}
	c := r.dial(ev.Conn)
	r.runEnded(c)
	if len(c.deferred) > 0 {
		c.deferred = append(c.deferred, i)
		return
	}
	if ev.Dir == kavach.Request {
		if s := r.opts.Shift; s != nil {
			if d := s(r.step(e.step).N); d != r.shift {
				r.shift, r.jump = d, true
			}
		}
	}
	// What the client waited for comes first, at the time it came; then
	// the clock moves to the request's time.
	if !e.batched && !r.answered(c, e.owed) {
		c.deferred = append(c.deferred, i)
		return
	}
	at := ev.Offset
	if read, ok := r.plan.reads[e.step]; ok && ev.Dir == kavach.Request {
		// The recording's build read its clock later than the proxy
		// stamped the request: the replay's reads it there too.
		at = read
	}
	r.advance(r.at(at))
	if r.stop {
		return
	}
	if ev.Dir == kavach.Close {
		r.hangUp(c)
		return
	}
	if r.proc.Exited() != nil {
		// The build died with nothing waiting on it (or before we saw it).
		// What it ended is taken in first: a step waiting on a connection
		// it closed crashed there, and the replay stops at that step, not
		// at this one (under load the exit can be seen before the readers
		// have read the ends).
		if r.ends(); r.stop {
			return
		}
		r.send(ev, e.step, false)
		r.crashed(c, "the build is gone")
		r.stop = true
		return
	}
	r.step(e.step).batched = e.batched
	if n := r.step(e.step).N; r.probe != nil && n > r.opts.Inputs.From && (r.opts.Inputs.Until == 0 || n <= r.opts.Inputs.Until) {
		if r.fingerprint(r.step(e.step)); r.stop {
			return // a reply owed before it never came: the replay hung there
		}
	}
	r.takenIn(c)
	r.send(ev, e.step, true)
	if ev.Flags&kavach.Foreign != 0 {
		// Where the service ran it, before whatever follows it.
		r.answered(c, c.finished+len(c.pending))
	}
}

// response plays event i, a reply (or push) the recording had: the
// build has it before the clock moves past the time it was recorded at
// (or is idle without it: then time flows to it).
func (r *runner) response(i int, e event) {
	ev := e.Event
	c := r.conns[ev.Conn]
	if c != nil && e.push == 0 {
		if sh := c.shows[e.owed]; sh != nil && sh.recorded == nil {
			sh.recorded = bytes.Clone(ev.Data)
			if sh.replayed == nil {
				r.unlearnt = append(r.unlearnt, unlearnt{c, e.owed})
			}
			r.learn(c, e.owed)
		}
	}
	if c != nil && e.batched && len(c.deferred) == 0 {
		// Not waited for here, with the rest of its run; but before
		// another connection's event, which the recording had after it.
		if k := len(r.batchOwed) - 1; k >= 0 && r.batchOwed[k].c == c {
			r.batchOwed[k].n = e.owed // the run goes on: its last reply counts
		} else {
			r.batchOwed = append(r.batchOwed, unlearnt{c, e.owed})
		}
	}
	if c == nil || len(c.deferred) > 0 || e.batched {
		r.advance(r.at(ev.Offset))
		return
	}
	r.answered(c, e.owed)
	if e.push > 0 && !r.heard(c, e.push) {
		// A push (a pub/sub message) the build sends only once the
		// clock is at its time (a key's expiry event): move it there,
		// and take it in if it comes then.
		r.advance(r.at(ev.Offset))
		r.heard(c, e.push)
		return
	}
	if c.finished >= e.owed && !r.unconfirmed && !r.blocked() && r.rng == nil {
		// It came, and nothing waits on the build: no timer of a
		// blocked client can fire and nothing sent is unconfirmed, so
		// the move to the reply's time is left to the next event,
		// which moves the clock on from here (docs/replay.md, "What a
		// move costs"). A perturbed replay makes every move, as
		// before: each is settled there.
		return
	}
	r.advance(r.at(ev.Offset))
	// Not come by its recorded time: let time flow on towards the
	// next event's time, no further (what other connections do then
	// may be what wakes it).
	if r.has(i+1) && !r.answered(c, e.owed) {
		r.flowUntil(c, e.owed, r.at(r.ev(i+1).Offset))
	}
}

// fingerprint reads the state s is about to read, once everything sent
// before it has been handled: so every replay takes it at the same point
// of the recording, whatever the machine's load. The replay first waits
// for every reply still owed (a reply is sent once its request has run),
// or, for a request that blocks, until the build is idle without it.
func (r *runner) fingerprint(s *StepResult) {
	r.poll()
	for _, c := range r.order {
		if len(c.pending) > 0 && !r.stop {
			r.answered(c, c.finished+len(c.pending))
		}
	}
	var keys []string
	if r.opts.Inputs.Keys != nil {
		keys = r.opts.Inputs.Keys(s.N)
	}
	fp, err := r.probe.Fingerprint(s.Conn, keys)
	if err != nil {
		s.InputsError = err.Error()
		return
	}
	s.Inputs = fp
}

// flush plays the events held back on connections whose replies came.
func (r *runner) flush() {
	for again := true; again && !r.stop; {
		again = false
		for _, c := range r.order {
			// Held back until its replies come; released when they did, or
			// when no step on the connection waits any more (the build
			// answered with fewer replies than recorded: none is coming).
			if len(c.deferred) == 0 || (r.ev(c.deferred[0]).owed > c.finished && !c.broken && len(c.pending) > 0) {
				continue
			}
			held := c.deferred
			c.deferred = nil
			for k, i := range held {
				r.process(i)
				if len(c.deferred) > 0 || r.stop {
					c.deferred = append(c.deferred, held[k+1:]...)
					break
				}
			}
			again = true
		}
	}
}
