package replay

import (
	"bytes"
	"slices"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

func (r *runner) dial(id uint64) *conn {
	if c := r.conns[id]; c != nil {
		return c
	}
	if r.inline != nil {
		// A second connection open: the first one's replies now come by
		// a reader of its own too, so that a wait hears either.
		r.unline()
	}
	c := &conn{id: id, idx: len(r.order)}
	r.conns[id] = c
	r.order = append(r.order, c)
	nc, err := launch.DialTimeout(r.proc.Addr(), r.opts.StepTimeout)
	if err != nil {
		c.err, c.broken = err, true
		r.markDirty(c)
		return c
	}
	c.nc = nc
	if r.alone(c) && r.makeInline(c) {
		return c
	}
	go r.read(c, framer{})
	return c
}

// framer cuts a connection's bytes into replies.
type framer struct {
	data []byte
	// raw: the bytes stopped making sense to the integration's framing;
	// from there on every read is one reply, as it came.
	raw bool
}

// frame pushes the whole replies in what has been read of c so far, and
// reports whether there was one.
func (r *runner) frame(c *conn, f *framer) bool {
	framed := false
	for len(f.data) > 0 {
		m, serr := r.opts.Integration.SplitResponse(f.data)
		if f.raw || serr != nil {
			f.raw, m = true, len(f.data)
		}
		if m == 0 {
			break
		}
		r.push(c, append([]byte(nil), f.data[:m]...), nil)
		f.data = f.data[m:]
		framed = true
	}
	return framed
}

// read frames replies on c until the connection ends, in a goroutine of
// its own (a connection the runner does not read itself: inline).
func (r *runner) read(c *conn, f framer) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.nc.Read(buf)
		if n > 0 {
			c.reading.Store(true)
		}
		f.data = append(f.data, buf[:n]...)
		if n == len(buf) && err == nil && !f.raw {
			// The buffer filled: more is waiting. Frame once it is all
			// in, not on every read of a large reply (framing a 200 KB
			// COMMAND DOCS reply again for each 64 KB read cost more than
			// the rest of its step).
			continue
		}
		r.frame(c, &f)
		if err != nil {
			r.push(c, nil, err)
			c.reading.Store(false)
			return
		}
		// Bytes of a frame not yet whole are still being written by
		// the build: the reader holds them only while it frames.
		c.reading.Store(false)
	}
}

func (r *runner) push(c *conn, frame []byte, err error) {
	c.mu.Lock()
	if err != nil {
		c.err = err
	} else {
		c.frames = append(c.frames, frame)
	}
	c.mu.Unlock()
	r.markDirty(c)
	r.frames.Add(1)
	if c.inline {
		// The runner itself read it: nobody to wake.
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// markDirty has poll look at c next time.
func (r *runner) markDirty(c *conn) {
	r.dirtyMu.Lock()
	if !c.dirty {
		c.dirty = true
		r.dirty = append(r.dirty, c)
	}
	r.dirtyMu.Unlock()
}

// poll attaches every framed reply to its step, the way kavach.Steps
// does, and notices connections the build ended. It looks at the
// connections marked dirty, in the order they were opened (as a look at
// every connection would); one the build ended and the replay has not
// closed stays marked, so that a request sent on it later is seen to
// crash.
func (r *runner) poll() {
	if c := r.inline; c != nil && !c.drained {
		r.readNow()
	}
	r.dirtyMu.Lock()
	look := append(r.polled[:0], r.dirty...)
	r.dirty = r.dirty[:0]
	for _, c := range look {
		c.dirty = false
	}
	r.dirtyMu.Unlock()
	r.polled = look
	if len(look) > 1 {
		slices.SortFunc(look, func(a, b *conn) int { return a.idx - b.idx })
	}
	for _, c := range look {
		c.mu.Lock()
		frames, err := c.frames, c.err
		c.frames = nil
		c.mu.Unlock()
		r.taken += int64(len(frames))
		for _, f := range frames {
			r.attach(c, f)
		}
		if err != nil && !c.ended {
			r.taken++ // the reader's end counts as a frame
		}
		if err != nil {
			c.ended = true
		}
		if err != nil && !c.closed && c.nc != nil {
			// Steps waiting on a connection the build ended (sent before
			// or after it did) get no reply: they crashed.
			c.broken = true
			if len(c.pending) > 0 {
				r.crashed(c, "connection closed by the build")
			}
			r.markDirty(c)
		}
	}
}

func (r *runner) attach(c *conn, frame []byte) {
	push := r.opts.Integration.IsPush(frame)
	if push {
		c.pushes++
	}
	if len(c.pending) == 0 || push {
		if i, ok := r.last[c.id]; ok {
			r.addReply(r.step(i), frame)
		}
		return
	}
	w := &c.pending[0]
	s := r.step(w.step)
	r.addReply(s, frame)
	if w.left--; w.left == 0 {
		c.pending = c.pending[1:]
		c.finished++
		if sh := c.shows[c.finished]; sh != nil {
			sh.replayed = bytes.Clone(frame)
			r.learn(c, c.finished)
		}
		r.finish(s)
		if r.clock != nil {
			s.Answered = r.clock.Now()
		}
		// Withheld steps queued behind it are answered already.
		for len(c.pending) > 0 && c.pending[0].left == 0 {
			c.pending = c.pending[1:]
			c.finished++
		}
	}
}

// send sends a request as step i. With wait false the step is only
// marked as sent (the build is gone).
func (r *runner) send(ev kavach.Event, i int, write bool) {
	s := r.step(i)
	c := r.dial(ev.Conn)
	s.Virtual, s.Ran, s.Wall = r.at(ev.Offset), true, time.Now()
	if r.clock != nil {
		s.Virtual = r.clock.Now()
	}
	r.last[ev.Conn] = i
	if r.contain != nil && write {
		action, reply, why := r.contain.Contain(ev.Conn, ev.Data, ev.Flags&kavach.ParseError != 0)
		switch action {
		case kavach.Withhold:
			r.withhold(c, s, i, reply, why)
			return
		case kavach.SendUncompared:
			s.Contained = why
		}
	}
	replies := 1
	if ev.Flags&kavach.ParseError == 0 {
		replies = r.opts.Integration.Replies(ev.Data)
	}
	if replies > 0 {
		c.pending = append(c.pending, waiting{step: i, left: replies})
		s.awaiting = true
		c.sentN++
		if r.ids != nil && ev.Flags&kavach.ParseError == 0 && r.ids.Shows(ev.Data) {
			if c.shows == nil {
				c.shows = map[int]*shownID{}
			}
			c.shows[c.sentN] = &shownID{request: ev.Data}
		}
	}
	if !write {
		return
	}
	if c.nc == nil {
		r.crashed(c, "could not connect: "+c.err.Error())
		return
	}
	data := ev.Data
	if r.probe != nil {
		r.probe.Sent(ev.Conn, data)
	}
	if r.ids != nil && ev.Flags&kavach.ParseError == 0 {
		// An id the recording showed before this request is learnt
		// before it is sent, even where the step that showed it was
		// batched (its reply not waited for).
		for len(r.unlearnt) > 0 {
			u := r.unlearnt[0]
			r.unlearnt = r.unlearnt[1:]
			r.answered(u.c, u.n)
		}
		data = r.ids.Map(data)
	}
	if r.opts.Prepare != nil && ev.Flags&kavach.ParseError == 0 {
		data = r.opts.Prepare(data)
	}
	c.nc.SetWriteDeadline(time.Now().Add(r.opts.StepTimeout))
	r.sent, r.lastConn = true, c
	if replies == 0 {
		r.unconfirmed = true
	}
	if _, err := c.nc.Write(data); err != nil {
		r.crashed(c, "write failed: "+err.Error())
	}
}

// takenIn waits, before a request on c, until the build has taken in
// what went out on the connection the last request went out on, when
// that was another connection and a step there still waits for its reply
// (a BLPOP that blocks): the build is seen idle with nothing unread
// (finishing). The recording had that request reach the service first;
// sent on at once, the build can read c's first. Redis's suite, "client
// unblock tests": BLMPOP on one connection, then INFO and CLIENT UNBLOCK
// ... ERROR on another in the same millisecond; the unblock found nobody
// blocked in 5 of 50 replays beside stress-ng, 0 of 50 with this wait.
// (Likely why: Redis's level-triggered epoll puts a connection it has
// just reported back on its ready list, ahead of a connection whose
// bytes come after, when Redis has not waited again in between.)
// A reply already in, or the build seen idle since, costs nothing.
func (r *runner) takenIn(c *conn) {
	if l := r.lastConn; l != nil && l != c && r.sent && len(l.pending) > 0 && !l.closed {
		r.finishing()
	}
}

// withhold answers step i, on c, in the build's place: its request is not
// sent (kavach.Containment). It counts as answered once every step sent
// before it on c is, so that what follows waits as it would have.
func (r *runner) withhold(c *conn, s *StepResult, i int, reply []byte, why string) {
	s.Contained = why
	s.Responses = append(s.Responses, reply)
	r.finish(s)
	if r.clock != nil {
		s.Answered = r.clock.Now()
	}
	if len(c.pending) == 0 {
		c.finished++
		return
	}
	c.pending = append(c.pending, waiting{step: i, left: 0})
}

// hangUp closes c where the recorded client closed it. A step still
// waiting on it gets what it got: the client did not wait for more.
func (r *runner) hangUp(c *conn) {
	c.closed = true
	r.sent, r.unconfirmed = true, true
	r.hangUpInline(c)
	if c.nc != nil {
		c.nc.Close()
	}
	for _, w := range c.pending {
		s := r.step(w.step)
		if len(s.Responses) == 0 && s.Outcome.Kind == "" {
			// As the recording shows a step its client closed the
			// connection on before any reply came (a blocked BLPOP).
			s.Outcome = kavach.Outcome{Kind: kavach.Hang, Detail: "no reply before the client closed the connection"}
		}
		r.finish(s)
	}
	c.pending = nil
}

func (r *runner) addReply(s *StepResult, frame []byte) {
	s.Responses = append(s.Responses, frame)
}

// finish classifies a step that got its replies.
func (r *runner) finish(s *StepResult) {
	if s.Outcome.Kind == "" {
		s.Outcome = r.opts.Integration.Classify(s.Request, s.Responses)
	}
}

// crashed marks every step waiting on c as crashed. If the build process
// is gone, the replay stops there, with its exit as evidence.
func (r *runner) crashed(c *conn, why string) {
	exit := r.exitSoon()
	detail := why
	if exit != nil {
		detail = why + "; the build exited: " + exit.Evidence()
	}
	conns := []*conn{c}
	if exit != nil {
		// The process is gone: every step waiting anywhere crashed.
		conns = r.order
	}
	for _, c := range conns {
		for _, w := range c.pending {
			s := r.step(w.step)
			if s.batched {
				r.lostBatch = true
			}
			if s.Outcome.Kind == "" {
				s.Outcome = kavach.Outcome{Kind: kavach.Crash, Detail: detail}
			}
		}
		c.pending = nil
	}
	if exit != nil {
		r.tr.Exit = exit
		r.tr.Stopped = "the build exited: " + exit.String()
		r.stop = true
	}
}

// exitSoon waits for the build to be reaped, if it is dying, and returns
// its exit evidence if it has exited. A build that is still working (a
// crash report being written, however slowly on a loaded machine) is
// waited for, up to the step timeout; one that is idle with the
// connection closed (it closed it on purpose) is not.
//
// A connection closes when the process holding it exits, and only after
// the kernel marked it exiting: so when every process of the tree seen
// last is still there and none is exiting, the build closed the
// connection itself and is not waited for (a server that closes
// connections costs nothing beyond their steps). Anything else — a process
// gone, exiting, or a tree that changed — is waited for as above.
func (r *runner) exitSoon() *kavach.Exit {
	if e := r.proc.Exited(); e != nil {
		return e
	}
	if r.standing != nil && r.watch.stands(r.standing) {
		return nil
	}
	defer func() {
		if r.proc.Exited() == nil {
			r.standing = r.watch.members()
		}
	}()
	bound := time.NewTimer(r.opts.StepTimeout)
	defer bound.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	// 200 ms without working: a build writing its crash report into a
	// full pipe sleeps for moments too.
	calm := 0
	for calm < 20 {
		select {
		case <-r.proc.Done():
			return r.proc.Exited()
		case <-bound.C:
			return r.proc.Exited()
		case <-r.ctx.Done():
			return r.proc.Exited()
		case <-tick.C:
		}
		calm++
		if r.watch.busy() {
			calm = 0
		}
	}
	return r.proc.Exited()
}

func (r *runner) closeAll() {
	for _, c := range r.order {
		if c.nc != nil {
			c.nc.Close()
		}
	}
}
