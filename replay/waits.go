package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/kavach-dev/kavach"
)

// answered waits until c has the replies of its first want steps, and
// reports whether it has. It stops waiting, false, once the build is idle
// without them: they are not coming at this virtual time. A build busy
// for the step timeout without answering hangs the replay.
func (r *runner) answered(c *conn, want int) bool {
	busy := time.Now()
	long := r.long()
	for {
		r.poll()
		if c.finished >= want || c.broken || c.closed || r.stop {
			return true
		}
		if r.ctx.Err() != nil {
			r.interrupted(r.ctx)
			return true
		}
		if r.wait(200 * time.Microsecond) {
			continue
		}
		if r.idle() {
			// No step waits on c: the build answered with fewer replies
			// than recorded, and what is missing is not coming.
			return len(c.pending) == 0
		}
		if long.done() {
			r.catchUp(c)
		}
		if waited := time.Since(busy); waited > r.opts.StepTimeout && long.outworked(r.opts.StepTimeout, waited) {
			r.hung(r.unanswered(), r.oldest())
			return true
		}
	}
}

// outworked tells, once a build has gone the step timeout of real time
// without answering, whether it hangs: it used half that much processor
// time since the wait began, or it is stopped, or it has gone four times
// the timeout. A build the machine starves (runnable, waiting for a core,
// as beside stress-ng or a parallel test run) is given time: a script of
// 300 ms of processor time took over 5 s of real time on a loaded machine,
// and was graded a hang. Looked at every tenth of a second.
func (l *longWork) outworked(timeout, waited time.Duration) bool {
	if l.w.pid <= 0 || waited > 4*timeout {
		return true
	}
	now := time.Now()
	if now.Before(l.nextHang) {
		return false
	}
	l.nextHang = now.Add(100 * time.Millisecond)
	if _, stopped := l.w.look(); stopped || !l.looked {
		return true
	}
	return l.w.cpu()-l.cpu >= timeout/2
}

// longWork tells a build working on something long from one waiting for
// a busy machine: it has used workLong of processor time since it was
// first looked at. It is looked at first once longLook of real time has
// passed (a wait that ends sooner, nearly every wait, costs no read of
// /proc: reading every thread's times before each wait was a third of a
// replay's processor time), then every tenth of workLong. Once done, it
// stays done.
type longWork struct {
	w      watch
	cpu    time.Duration
	next   time.Time
	looked bool
	isit   bool
	// nextHang is when outworked looks at the build again.
	nextHang time.Time
}

// workLong is how much processor time the build uses without answering
// before it is taken to be working on something long: the step waiting
// on it is caught up (catchUp), a clock move no longer waits for it to
// go idle (quiesce).
const workLong = 250 * time.Millisecond

// longLook is how long a wait goes before the build's processor time is
// first read.
const longLook = 20 * time.Millisecond

func (r *runner) long() *longWork {
	return &longWork{w: r.watch, next: time.Now().Add(longLook)}
}

func (l *longWork) done() bool {
	if l.isit || l.w.pid <= 0 {
		return l.isit
	}
	now := time.Now()
	switch {
	case !now.After(l.next):
	case !l.looked:
		l.looked, l.cpu, l.next = true, l.w.cpu(), now.Add(workLong)
	default:
		l.next = now.Add(workLong / 10)
		l.isit = l.w.cpu()-l.cpu >= workLong
	}
	return l.isit
}

// runEnded waits, before an event of c, for the replies of another
// connection's pipelined run that the recording had before it (their
// response events were batched: not waited for where recorded). Sent on
// without them, the build could take c's request first: a script that c
// starts would run before the run's CONFIG SET that sets its time limit.
// A reply already in costs nothing (no poll of every connection); one
// that does not come while the build works on something long is not
// waited for (the run may itself have started that work, and only a
// later clock move ends it), nor is one the idle build does not send.
func (r *runner) runEnded(c *conn) {
	if len(r.batchOwed) == 0 {
		return
	}
	keep := r.batchOwed[:0]
	var long *longWork
	for _, o := range r.batchOwed {
		if o.c == c {
			if o.c.finished < o.n {
				keep = append(keep, o) // the run goes on
			}
			continue
		}
		for !r.stop && o.c.finished < o.n && !o.c.broken && !o.c.closed {
			if long == nil {
				long = r.long()
			}
			if r.poll(); o.c.finished >= o.n {
				break
			}
			if r.ctx.Err() != nil {
				r.interrupted(r.ctx)
				break
			}
			if !r.wait(200*time.Microsecond) && (r.idle() || long.done()) {
				break
			}
		}
	}
	r.batchOwed = keep
}

// learn tells the connection ids the step numbered n on c shows, once
// its reply is in as recorded and as replayed.
func (r *runner) learn(c *conn, n int) {
	sh := c.shows[n]
	if sh.recorded == nil || sh.replayed == nil {
		return
	}
	r.ids.Learn(sh.request, sh.recorded, sh.replayed)
	delete(c.shows, n)
}

// catchUp moves the clock, while the build works on something long
// without answering c's oldest waiting step, on to the time the
// recording had that step's last reply, if that is ahead: in the
// recording, time passed while the build worked, and what the build
// answers can depend on it having passed (a script over its time limit
// lets the build answer others BUSY, and be killed, only once its clock
// says the limit is past). Moved while a command runs, the clock could
// be read later than recorded; so only a build that has used workLong of
// processor time is caught up, and never past what the recording saw.
// The recording saw the event being played too: when that is later (the
// build, unlike the recording's, took another connection's script before
// c's request, and writes c's reply only once the script's limit is
// past), the clock goes on to it.
func (r *runner) catchUp(c *conn) {
	if r.clock == nil || len(c.pending) == 0 {
		return
	}
	i := c.pending[0].step
	if i >= len(r.plan.due) {
		return
	}
	from, due := r.clock.Now(), r.at(max(r.plan.due[i], r.playing))
	if !due.After(from) {
		return
	}
	if err := r.clock.Set(due); err != nil {
		r.opts.Logger.Error("set clock", "err", err)
		return
	}
	r.settle(from, r.clock.Now(), true)
}

// ends waits, for a build that has exited, until the reader of every
// connection still open has read its end (the kernel closed them all
// when the build exited; a child of it still holding one bounds the wait
// at a second), and takes in what the readers framed.
func (r *runner) ends() {
	bound := time.Now().Add(min(r.opts.StepTimeout, time.Second))
	for {
		r.poll()
		if r.stop || r.open() == 0 || time.Now().After(bound) {
			return
		}
		r.wait(time.Millisecond)
	}
}

// heard waits until c has taken in its first want pushes (replies no
// request asked for: pub/sub messages, invalidations), and reports
// whether it has. The recording had them before the connection's next
// event: taken in later, a push would be attached to the next request's
// step, or lost when the client closes the connection (docs/replay.md,
// "Pushes"). It stops waiting, false, once the build is idle without
// them, or has worked for the step timeout: a push that does not come is
// for the comparison to find, not a hang.
func (r *runner) heard(c *conn, want int) bool {
	busy := time.Now()
	for {
		r.poll()
		if c.pushes >= want {
			return true
		}
		if c.broken || c.closed || r.stop {
			return false
		}
		if r.ctx.Err() != nil {
			r.interrupted(r.ctx)
			return false
		}
		if r.wait(200 * time.Microsecond) {
			continue
		}
		if r.idle() || time.Since(busy) > r.opts.StepTimeout {
			return false
		}
	}
}

// unanswered is why a build that did not answer for the step timeout of
// real time hangs the replay: it worked all along, or it was stopped.
func (r *runner) unanswered() string {
	if _, stopped := r.watch.look(); stopped {
		return fmt.Sprintf("the build was stopped (SIGSTOP or a tracer) for %s of real time without answering", r.opts.StepTimeout)
	}
	return fmt.Sprintf("the build worked for %s of real time without answering", r.opts.StepTimeout)
}

// idle reports whether the build has done everything it will do until a
// timer or a request wakes it, and every reply it sent has been framed:
// no thread of it running, twice, a moment apart, with no reply in
// between and no byte unread on any connection. It walks the tree
// afresh (look): reading through the files kept open (glance) took a
// third of its cost under the race detector, but the two CI runs made
// with it each graded a realistic diff's variant otherwise (a state
// that differed between the builds' replays), and none made without
// it did; not understood, so not kept.
func (r *runner) idle() bool {
	if r.watch.pid <= 0 {
		// No process to watch (a launcher of another kind): a reply that
		// has not come within a while is taken as not coming.
		return !r.wait(50 * time.Millisecond)
	}
	for range 2 {
		n := r.frames.Load()
		if busy, stopped := r.watch.look(); busy || stopped || r.unread(false) {
			// A stopped build (SIGSTOP, a tracer) is not idle: what it
			// was sent is not done, and it answers nothing until it runs.
			return false
		}
		pause(100 * time.Microsecond)
		if r.frames.Load() != n || len(r.wake) > 0 {
			return false
		}
		if c := r.inline; c != nil && inQueue(c.nc) > 0 {
			// A reply came during the pause, which no reader framed.
			return false
		}
	}
	return true
}

// open is how many connections to the build are open.
func (r *runner) open() int {
	n := 0
	for _, c := range r.order {
		if c.nc != nil && !c.closed && !c.ended {
			n++
		}
	}
	return n
}

// unread reports whether a connection has bytes its reader has not
// framed; read: but the inline connection's, just read to the end.
func (r *runner) unread(read bool) bool {
	for _, c := range r.order {
		if c.reading.Load() {
			return true
		}
		if read && c == r.inline {
			continue
		}
		if c.nc != nil && !c.closed && inQueue(c.nc) > 0 {
			return true
		}
	}
	return false
}

// drain runs after the last event: the steps still waiting (the recorded
// failure, often) get their replies, their close or their timeout. While
// the build is idle and a step waits, virtual time flows: to the reply's
// recorded time first, then on in steps the build observes, until the
// step's timeout has run out in virtual time.
func (r *runner) drain(ctx context.Context) {
	busy := time.Now()
	for !r.stop {
		if ctx.Err() != nil {
			r.interrupted(ctx)
			return
		}
		r.poll()
		r.flush()
		if r.stop || !r.outstanding() {
			return
		}
		if r.wait(time.Millisecond) {
			busy = time.Now()
			continue
		}
		if !r.idle() {
			if time.Since(busy) > r.opts.StepTimeout {
				r.hung(r.unanswered(), r.outstandingSteps()...)
			}
			continue
		}
		busy = time.Now()
		next, late := r.flow()
		if len(late) > 0 {
			r.hung(fmt.Sprintf("no reply within %s of virtual time", r.opts.StepTimeout), late...)
			return
		}
		if r.clock == nil {
			// Real time (a build that cannot be faked): time flows by itself.
			r.wait(10 * time.Millisecond)
			continue
		}
		from := r.clock.Now()
		if err := r.clock.Set(next); err != nil {
			r.opts.Logger.Error("set clock", "err", err)
		}
		r.settle(from, r.clock.Now(), true)
	}
}

// flowUntil moves the clock on from now towards limit, in steps the build
// observes (a millisecond, then an eighth of the time waited), while the
// build is idle and c lacks its first want steps' replies.
func (r *runner) flowUntil(c *conn, want int, limit time.Time) {
	if r.clock == nil {
		return
	}
	began := r.clock.Now()
	for !r.stop {
		now := r.clock.Now()
		if !now.Add(time.Millisecond).Before(limit.Add(time.Millisecond)) {
			return
		}
		next := now.Add(max(now.Sub(began)/8, time.Millisecond))
		if next.After(limit) {
			next = limit
		}
		if err := r.clock.Set(next); err != nil || !r.clock.Now().After(now) {
			return
		}
		r.settle(now, r.clock.Now(), true)
		if r.answered(c, want) {
			return
		}
	}
}

// flow picks the next virtual time while the build is idle and steps
// wait: the earliest recorded reply time still ahead, else a step of an
// eighth of the time waited so far (at least a millisecond), never past
// the first step's timeout. It returns the steps whose timeout has run
// out instead, if any.
func (r *runner) flow() (time.Time, []int) {
	var (
		now      time.Time
		next     time.Time
		deadline time.Time
		late     []int
		sent     time.Time
	)
	if r.clock != nil {
		now = r.clock.Now()
	} else {
		now = time.Now()
	}
	for _, i := range r.outstandingSteps() {
		s := r.step(i)
		recorded := s.Virtual
		if i < len(r.plan.due) {
			recorded = r.at(r.plan.due[i])
		}
		d := later(s.Virtual, recorded).Add(r.opts.StepTimeout)
		if r.clock == nil {
			d = s.Wall.Add(r.opts.StepTimeout)
		}
		if !now.Before(d) {
			late = append(late, i)
			continue
		}
		if deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
		if recorded.After(now) && (next.IsZero() || recorded.Before(next)) {
			next = recorded
		}
		if sent.IsZero() || s.Virtual.Before(sent) {
			sent = s.Virtual
		}
	}
	if len(late) > 0 || deadline.IsZero() {
		return now, late
	}
	if next.IsZero() {
		step := max(now.Sub(sent)/8, time.Millisecond)
		next = now.Add(step)
	}
	if next.After(deadline) {
		next = deadline
	}
	// The clock moves in whole milliseconds: never less than one.
	return later(next, now.Add(time.Millisecond)), nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// outstanding reports whether a step waits for a reply or an event is
// held back.
func (r *runner) outstanding() bool {
	for _, c := range r.order {
		if len(c.pending) > 0 || len(c.deferred) > 0 {
			return true
		}
	}
	return false
}

// outstandingSteps are the oldest waiting step of each connection.
func (r *runner) outstandingSteps() []int {
	var out []int
	for _, c := range r.order {
		if len(c.pending) > 0 {
			out = append(out, c.pending[0].step)
		}
	}
	return out
}

// oldest is the earliest step waiting anywhere, or -1.
func (r *runner) oldest() int {
	best := -1
	for _, i := range r.outstandingSteps() {
		if best < 0 || i < best {
			best = i
		}
	}
	return best
}

// hung marks steps as hangs and stops the replay there.
func (r *runner) hung(why string, steps ...int) {
	first := -1
	for _, i := range steps {
		if i < 0 {
			continue
		}
		s := r.step(i)
		if s.Outcome.Kind == "" {
			s.Outcome = kavach.Outcome{Kind: kavach.Hang, Detail: why}
		}
		if first < 0 || i < first {
			first = i
		}
	}
	if first >= 0 {
		r.tr.Stopped = fmt.Sprintf("step %d hung: %s", r.step(first).N, why)
	}
	r.stop = true
}

func (r *runner) interrupted(ctx context.Context) {
	r.tr.Stopped = "interrupted: " + context.Cause(ctx).Error()
	r.stop = true
}
