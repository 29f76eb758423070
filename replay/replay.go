// Package replay starts a build, drives a recording's events through it
// as they were recorded, under a virtual clock, and returns a trace: per
// step, the replies, the normalized output and the outcome. It owns the
// build process, its port and its clock; no process outlives a replay.
package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

// Options configure a replay. The zero value of every optional field is
// documented beside it.
type Options struct {
	Codec      kavach.Codec      // frames replies; required
	Classifier kavach.Classifier // classifies replies; required
	// Normalizer gives the output compared; nil compares raw bytes.
	Normalizer kavach.Normalizer
	Launcher   kavach.Launcher // starts the build; required
	// StepTimeout bounds the wait for each reply; past it the step hangs.
	// Zero means 5 s.
	StepTimeout time.Duration
	// Start is the virtual time of offset 0: the recording's start.
	Start time.Time
	// Shift moves the virtual clock at and after a step (clock variants).
	// Nil: no shift.
	Shift func(step int) time.Duration
	// Prepare rewrites a request before it is sent (putting secrets back,
	// say). Nil: requests are sent as recorded.
	Prepare func(request []byte) []byte
	// RealTime replays without faking the clock even when the build could
	// be faked. The trace says so.
	RealTime bool
	// Perturb replays with the timing disturbed, as on a loaded machine:
	// real time passes between some clock moves, and every move is
	// settled. Noise detection replays the old build once this way, so
	// that an answer that depends on timing shows as noise.
	Perturb bool
	// Logger gets a line per problem. Nil: discard.
	Logger *slog.Logger
}

// Trace is what one replay of a build produced.
type Trace struct {
	Build kavach.Launch `json:"build"`
	// Clock is "virtual" (libfaketime), or "real: REASON" when the build
	// could not be faked and was replayed in real time, gaps compressed.
	Clock string       `json:"clock"`
	Steps []StepResult `json:"steps"`
	// Stopped says why the replay ended before the last step, if it did:
	// a hang, or the build exiting.
	Stopped string        `json:"stopped,omitempty"`
	Exit    *kavach.Exit  `json:"exit,omitempty"` // set when the build exited during the replay
	Wall    time.Duration `json:"wall_ns"`
	// Version is what the build reports of itself ("redis 7.0.15").
	Version string `json:"version,omitempty"`
}

// StepResult is one step of a trace.
type StepResult struct {
	N       int            `json:"step"`
	Conn    uint64         `json:"conn"`
	Virtual time.Time      `json:"virtual_time"`
	Ran     bool           `json:"ran"` // false: the replay stopped before this step
	Outcome kavach.Outcome `json:"outcome"`
	// Responses are the raw replies, in arrival order.
	Responses [][]byte `json:"responses"`
	// Output is the normalized replies, what comparisons use.
	Output []any `json:"output"`
	// Answered is the virtual time at which the step got its last reply
	// (zero when it got none, or the clock is real).
	Answered time.Time `json:"answered_at,omitzero"`
	// Request is the request as sent (before Prepare).
	Request []byte `json:"-"`
	// Wall is the real time at which the request was sent.
	Wall time.Time `json:"-"`

	batched bool // sent without waiting for the replies before it
}

// Run replays events against the build described by launch. It returns
// an error only when the replay could not happen (bad options, a build
// that does not start); a crash or hang during the replay is an outcome
// in the trace.
func Run(ctx context.Context, build kavach.Launch, events []kavach.Event, opts Options) (*Trace, error) {
	if opts.Codec == nil || opts.Classifier == nil || opts.Launcher == nil {
		return nil, errors.New("replay: Codec, Classifier and Launcher are required")
	}
	if opts.StepTimeout == 0 {
		opts.StepTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	began := time.Now()
	tr, again, err := run(ctx, build, events, opts, true)
	if again && err == nil && ctx.Err() == nil {
		// The build died with pipelined steps unanswered: a build
		// answers a batch only once it has read it all, so those steps
		// lost replies that round trips would have had. Once more,
		// without batches.
		tr, _, err = run(ctx, build, events, opts, false)
	}
	if tr != nil {
		tr.Wall = time.Since(began)
	}
	return tr, err
}

// run is one replay; with batch, a connection's requests of one virtual
// millisecond are pipelined (runner.batches). It reports whether the
// build died with such a batch unanswered.
func run(ctx context.Context, build kavach.Launch, events []kavach.Event, opts Options, batch bool) (*Trace, bool, error) {
	tr := &Trace{Build: build, Clock: "virtual"}

	var clock *Clock
	fakeable, why := Fakeable(build.Path)
	if opts.RealTime {
		fakeable, why = false, "asked for real time"
	}
	if fakeable {
		dir, err := os.MkdirTemp(clockDir(), "kavach-clock-")
		if err != nil {
			return nil, false, fmt.Errorf("replay: clock directory: %w", err)
		}
		defer os.RemoveAll(dir)
		if clock, err = NewClock(dir, opts.Start); err != nil {
			return nil, false, err
		}
		build.Env = append(append([]string(nil), build.Env...), clock.Env()...)
	} else {
		tr.Clock = "real: " + why
	}

	proc, err := launch.Start(ctx, opts.Launcher, build)
	if err != nil && ctx.Err() != nil {
		// Stopped by a signal before the build was up: an interrupted
		// replay with no step run, as one stopped later would be.
		for _, st := range kavach.Steps(events, opts.Codec) {
			tr.Steps = append(tr.Steps, StepResult{N: st.N, Conn: st.Conn(), Responses: [][]byte{}, Output: []any{}, Request: st.Request.Data})
		}
		tr.Stopped = "interrupted: " + context.Cause(ctx).Error()
		return tr, false, nil
	}
	if err != nil {
		var se *launch.StartError
		// No answer at all under the fake clock: the known deadlock.
		if clock != nil && errors.As(err, &se) && strings.Contains(se.Reason, "never became ready") && !strings.Contains(se.Reason, "answered") {
			return nil, false, fmt.Errorf("%w\nthe build did not become ready under libfaketime: a build linked with the system's jemalloc deadlocks there (docs/replay.md); build it with MALLOC=libc", err)
		}
		return nil, false, err
	}
	defer func() {
		proc.Stop()
		if p, ok := proc.(interface{ Pid() int }); ok {
			cleanShm(p.Pid())
		}
	}()

	if id, ok := opts.Launcher.(kavach.Identifier); ok {
		tr.Version = id.Identify(build)
	} else {
		tr.Version = opts.Launcher.Version(ctx, proc.Addr())
	}
	r := &runner{opts: opts, proc: proc, clock: clock, tr: tr, events: events, conns: map[uint64]*conn{}, batch: batch, ctx: ctx}
	if p, ok := proc.(interface{ Pid() int }); ok {
		r.watch = watch{pid: p.Pid()}
	}
	if opts.Perturb {
		r.rng = rand.New(rand.NewPCG(uint64(len(events)), 0x6b617661))
	}
	defer r.closeAll()
	r.run(ctx)
	if e := proc.Exited(); e != nil && tr.Exit == nil {
		tr.Exit = e
	}
	return tr, r.lostBatch, nil
}

// runner drives one replay. docs/replay.md ("Order", "Time that flows")
// explains the rules it follows.
type runner struct {
	opts   Options
	proc   kavach.Process
	watch  watch
	clock  *Clock
	tr     *Trace
	events []kavach.Event
	conns  map[uint64]*conn
	order  []*conn        // conns in order of opening: deterministic iteration
	last   map[uint64]int // conn -> index of its latest step
	reqs   [][]byte       // per step, the request as recorded
	stepAt []int          // event index -> step index (-1: not a request); a variant's inserted events may repeat a Seq
	owed   []int          // per event: steps of its conn the recording had answered before it
	// batched marks requests sent without waiting for the replies before
	// them, and replies not waited for (see batches).
	batched   []bool
	batch     bool            // pipeline batches at all
	sent      bool            // a request went out since the build was last seen idle
	lostBatch bool            // the build ended a connection with batched steps unanswered
	due       []time.Duration // per step: recorded offset of its last reply, or of the request
	shift     time.Duration   // the clock variant's shift now in force
	jump      bool            // the shift changed: the clock may go back
	wake      chan struct{}   // a reader framed a reply, or its connection ended
	frames    atomic.Int64    // replies framed by readers so far
	rng       *rand.Rand      // timing perturbation (Options.Perturb); nil: none
	stop      bool
	ctx       context.Context // done: a signal; every wait ends
}

// conn is one client connection to the build, with a reader that frames
// replies onto a queue.
type conn struct {
	id       uint64
	nc       net.Conn
	mu       sync.Mutex
	frames   [][]byte
	err      error       // set when the reader ended
	reading  atomic.Bool // the reader holds bytes it has not framed yet
	pending  []waiting   // steps waiting for replies, oldest first
	finished int         // steps on this conn that got all their replies
	deferred []int       // events held back until the replies they follow arrive
	closed   bool        // closed by the replay (the recorded client closed it)
	broken   bool        // ended by the build
}

type waiting struct {
	step int // index into trace steps
	left int
}

func (r *runner) run(ctx context.Context) {
	steps := kavach.Steps(r.events, r.opts.Codec)
	r.stepAt = make([]int, len(r.events))
	k := 0
	for i, ev := range r.events {
		r.stepAt[i] = -1
		if ev.Dir == kavach.Request {
			r.stepAt[i] = k
			k++
		}
	}
	r.tr.Steps = make([]StepResult, len(steps))
	r.due = make([]time.Duration, len(steps))
	for i, s := range steps {
		r.tr.Steps[i] = StepResult{N: s.N, Conn: s.Conn(), Responses: [][]byte{}, Output: []any{}, Request: s.Request.Data}
		r.reqs = append(r.reqs, s.Request.Data)
		r.due[i] = s.Request.Offset
		if n := len(s.Responses); n > 0 {
			r.due[i] = s.Responses[n-1].Offset
		}
	}
	r.owed = owed(r.events, r.opts.Codec)
	r.batched = make([]bool, len(r.events))
	if r.batch {
		r.batched = r.batches()
	}
	r.last = map[uint64]int{}
	r.wake = make(chan struct{}, 1)
	defer r.normalize()
	for i := range r.events {
		if r.stop {
			break
		}
		if ctx.Err() != nil {
			r.interrupted(ctx)
			return
		}
		r.poll()
		r.flush()
		r.process(i)
	}
	r.drain(ctx)
	for i := range r.tr.Steps {
		s := &r.tr.Steps[i]
		if s.Ran && s.Outcome.Kind == "" {
			r.finish(s)
		}
	}
}

// owed returns, for each request and each close by the client, how many
// steps of its connection the recording had seen answered before it: what
// the client had waited for; for each reply, how many with it. Replies are matched to steps as kavach.Steps
// does; pushes answer no step.
func owed(events []kavach.Event, codec kavach.Codec) []int {
	type left struct{ n int }
	out := make([]int, len(events))
	pending := map[uint64][]*left{}
	done := map[uint64]int{}
	for i, ev := range events {
		switch ev.Dir {
		case kavach.Request:
			out[i] = done[ev.Conn]
			n := 1
			if codec != nil && ev.Flags&kavach.ParseError == 0 {
				n = codec.Replies(ev.Data)
			}
			switch {
			case n > 0 && ev.Flags&kavach.Inserted != 0:
				// No reply of it was recorded: its client waits for it
				// before the connection's next event.
				done[ev.Conn]++
			case n > 0:
				pending[ev.Conn] = append(pending[ev.Conn], &left{n})
			}
		case kavach.Response:
			q := pending[ev.Conn]
			if len(q) > 0 && (codec == nil || ev.Flags&kavach.ParseError != 0 || !codec.IsPush(ev.Data)) {
				if q[0].n--; q[0].n == 0 {
					pending[ev.Conn] = q[1:]
					done[ev.Conn]++
				}
			}
			out[i] = done[ev.Conn]
		case kavach.Close:
			out[i] = done[ev.Conn]
			delete(pending, ev.Conn)
		}
	}
	return out
}

// batches finds runs of one connection's events within one virtual
// millisecond, with no other connection's event among them: the build
// reads a connection's requests in order and the clock does not move, so
// sending them together (pipelined) gives the answers that round trips
// would. A request inside such a run is sent without waiting for the
// replies before it, and those replies are not waited for where they were
// recorded; they are waited for at the end of the run. (A request after a
// blocking command waits in the build's input, as it would have waited
// in the client.) This is what lets a replay keep up with a client that
// talks to the service directly (bench/replay.sh).
func (r *runner) batches() []bool {
	b := make([]bool, len(r.events))
	// No batches under a clock variant's shift (below), so no shift here.
	ms := func(ev kavach.Event) time.Time {
		return r.opts.Start.Add(ev.Offset).Truncate(time.Millisecond)
	}
	start := -1 // the first request of the current run
	for i, ev := range r.events {
		switch {
		case ev.Dir == kavach.Request && ev.Flags&kavach.ParseError == 0 && start >= 0 &&
			ev.Conn == r.events[start].Conn && ms(ev).Equal(ms(r.events[start])) && r.opts.Shift == nil:
			b[i] = true
			for j := start + 1; j < i; j++ {
				if r.events[j].Dir == kavach.Response {
					b[j] = true
				}
			}
		case ev.Dir == kavach.Request && ev.Flags&kavach.ParseError == 0:
			start = i
		case ev.Dir == kavach.Response && start >= 0 && ev.Conn == r.events[start].Conn && ms(ev).Equal(ms(r.events[start])):
			// part of the run if a request of it follows
		default:
			start = -1
		}
	}
	return b
}

// process plays one event: it opens a connection, moves the clock to a
// reply's recorded time, or sends a request (or closes a connection) once
// its connection has the replies the recording had before it. A request
// whose connection still waits for one is held back with the rest of
// that connection's events, and the replay goes on with the others.
func (r *runner) process(i int) {
	ev := r.events[i]
	switch {
	case ev.Dir == kavach.Open:
		r.dial(ev.Conn)
		return
	case ev.Dir == kavach.Response:
		// The build has this reply before the clock moves past the time it
		// was recorded at (or is idle without it: then time flows to it).
		c := r.conns[ev.Conn]
		if c == nil || len(c.deferred) > 0 || r.batched[i] {
			r.advance(r.at(ev.Offset))
			return
		}
		r.answered(c, r.owed[i])
		r.advance(r.at(ev.Offset))
		// Not come by its recorded time: let time flow on towards the
		// next event's time, no further (what other connections do then
		// may be what wakes it).
		if i+1 < len(r.events) && !r.answered(c, r.owed[i]) {
			r.flowUntil(c, r.owed[i], r.at(r.events[i+1].Offset))
		}
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
	if len(c.deferred) > 0 {
		c.deferred = append(c.deferred, i)
		return
	}
	if ev.Dir == kavach.Request {
		if s := r.opts.Shift; s != nil {
			if d := s(r.tr.Steps[r.stepAt[i]].N); d != r.shift {
				r.shift, r.jump = d, true
			}
		}
	}
	// What the client waited for comes first, at the time it came; then
	// the clock moves to the request's time.
	if !r.batched[i] && !r.answered(c, r.owed[i]) {
		c.deferred = append(c.deferred, i)
		return
	}
	r.advance(r.at(ev.Offset))
	if r.stop {
		return
	}
	if ev.Dir == kavach.Close {
		r.hangUp(c)
		return
	}
	if e := r.proc.Exited(); e != nil {
		// The build died with nothing waiting on it (or before we saw it).
		r.send(ev, r.stepAt[i], false)
		r.crashed(c, "the build is gone")
		r.stop = true
		return
	}
	r.tr.Steps[r.stepAt[i]].batched = r.batched[i]
	r.send(ev, r.stepAt[i], true)
}

// flush plays the events held back on connections whose replies came.
func (r *runner) flush() {
	for again := true; again && !r.stop; {
		again = false
		for _, c := range r.order {
			// Held back until its replies come; released when they did, or
			// when no step on the connection waits any more (the build
			// answered with fewer replies than recorded: none is coming).
			if len(c.deferred) == 0 || (r.owed[c.deferred[0]] > c.finished && !c.broken && len(c.pending) > 0) {
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
	// after the move would count its timeout from the new time.
	r.quiesce()
	if err := r.clock.Set(t); err != nil {
		r.opts.Logger.Error("set clock", "err", err)
		return
	}
	r.settle(from, r.clock.Now(), r.blocked())
}

// settle lets the build observe a clock move before anything else is
// sent: where the integration says the build keeps time in a timer of its
// own (Settler), until the build has turned its event loop on the new
// time (docs/replay.md, "Settled clocks"), however loaded the machine is.
func (r *runner) settle(from, to time.Time, blocked bool) {
	if from.Equal(to) {
		return
	}
	st, ok := r.opts.Codec.(kavach.Settler)
	need := ok && st.Settle(from, to, blocked)
	if r.rng != nil {
		// A perturbed replay: time passes between some moves as on a
		// loaded machine, and every move is settled.
		if r.rng.IntN(4) == 0 {
			time.Sleep(time.Duration(r.rng.IntN(2000)) * time.Microsecond)
		}
		need = ok
	}
	if need {
		r.turns(2)
	}
}

// turns waits until the build has gone to sleep n more times (turns of
// its event loop), or its process ended, or a bound of real time passed
// (a build that never sleeps is busy: a hang is decided elsewhere).
func (r *runner) turns(n int) {
	if r.watch.pid <= 0 {
		time.Sleep(25 * time.Millisecond)
		return
	}
	start := r.watch.sleeps()
	bound := time.Now().Add(min(r.opts.StepTimeout, 2*time.Second))
	pause := 50 * time.Microsecond
	for r.watch.sleeps()-start < n {
		if r.proc.Exited() != nil || time.Now().After(bound) {
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// quiesce waits, when requests were sent since the build was last seen
// idle, until it is idle again (or has worked for the step timeout, or is
// gone): everything it was sent has been read and handled.
func (r *runner) quiesce() {
	if !r.sent {
		return
	}
	began := time.Now()
	for !r.idle() {
		if r.proc.Exited() != nil || time.Since(began) > r.opts.StepTimeout || r.ctx.Err() != nil {
			break
		}
		r.wait(100 * time.Microsecond)
	}
	r.sent = false
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

// answered waits until c has the replies of its first want steps, and
// reports whether it has. It stops waiting, false, once the build is idle
// without them: they are not coming at this virtual time. A build busy
// for the step timeout without answering hangs the replay.
func (r *runner) answered(c *conn, want int) bool {
	busy := time.Now()
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
		if time.Since(busy) > r.opts.StepTimeout {
			r.hung(fmt.Sprintf("the build worked for %s of real time without answering", r.opts.StepTimeout), r.oldest())
			return true
		}
	}
}

// wait waits up to d of real time for a reader to frame a reply or end;
// it reports whether one did.
func (r *runner) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.wake:
		return true
	case <-t.C:
		return false
	}
}

// idle reports whether the build has done everything it will do until a
// timer or a request wakes it, and every reply it sent has been framed:
// no thread of it running, twice, a moment apart, with no reply in
// between and no byte unread on any connection.
func (r *runner) idle() bool {
	if r.watch.pid <= 0 {
		// No process to watch (a launcher of another kind): a reply that
		// has not come within a while is taken as not coming.
		return !r.wait(50 * time.Millisecond)
	}
	for range 2 {
		n := r.frames.Load()
		if r.watch.busy() || r.unread() {
			return false
		}
		time.Sleep(100 * time.Microsecond)
		if r.frames.Load() != n || len(r.wake) > 0 {
			return false
		}
	}
	return true
}

// unread reports whether a connection has bytes its reader has not framed.
func (r *runner) unread() bool {
	for _, c := range r.order {
		if c.reading.Load() {
			return true
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
				r.hung(fmt.Sprintf("the build worked for %s of real time without answering", r.opts.StepTimeout), r.outstandingSteps()...)
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
		s := r.tr.Steps[i]
		recorded := r.at(r.due[i])
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
		s := &r.tr.Steps[i]
		if s.Outcome.Kind == "" {
			s.Outcome = kavach.Outcome{Kind: kavach.Hang, Detail: why}
		}
		if first < 0 || i < first {
			first = i
		}
	}
	if first >= 0 {
		r.tr.Stopped = fmt.Sprintf("step %d hung: %s", r.tr.Steps[first].N, why)
	}
	r.stop = true
}

func (r *runner) interrupted(ctx context.Context) {
	r.tr.Stopped = "interrupted: " + context.Cause(ctx).Error()
	r.stop = true
}

func (r *runner) dial(id uint64) *conn {
	if c := r.conns[id]; c != nil {
		return c
	}
	c := &conn{id: id}
	r.conns[id] = c
	r.order = append(r.order, c)
	nc, err := net.DialTimeout("tcp", r.proc.Addr(), r.opts.StepTimeout)
	if err != nil {
		c.err, c.broken = err, true
		return c
	}
	c.nc = nc
	go r.read(c)
	return c
}

// read frames replies on c until the connection ends.
func (r *runner) read(c *conn) {
	buf := make([]byte, 64<<10)
	var data []byte
	raw := false
	for {
		n, err := c.nc.Read(buf)
		if n > 0 {
			c.reading.Store(true)
		}
		data = append(data, buf[:n]...)
		if n == len(buf) && err == nil && !raw {
			// The buffer filled: more is waiting. Frame once it is all
			// in, not on every read of a large reply (framing a 200 KB
			// COMMAND DOCS reply again for each 64 KB read cost more than
			// the rest of its step).
			continue
		}
		for len(data) > 0 {
			m, serr := r.opts.Codec.SplitResponse(data)
			if raw || serr != nil {
				raw, m = true, len(data)
			}
			if m == 0 {
				break
			}
			r.push(c, append([]byte(nil), data[:m]...), nil)
			data = data[m:]
		}
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
	r.frames.Add(1)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// poll attaches every framed reply to its step, the way kavach.Steps
// does, and notices connections the build ended.
func (r *runner) poll() {
	for _, c := range r.order {
		c.mu.Lock()
		frames, err := c.frames, c.err
		c.frames = nil
		c.mu.Unlock()
		for _, f := range frames {
			r.attach(c, f)
		}
		if err != nil && !c.closed && c.nc != nil {
			// Steps waiting on a connection the build ended (sent before
			// or after it did) get no reply: they crashed.
			c.broken = true
			if len(c.pending) > 0 {
				r.crashed(c, "connection closed by the build")
			}
		}
	}
}

func (r *runner) attach(c *conn, frame []byte) {
	if len(c.pending) == 0 || r.opts.Codec.IsPush(frame) {
		if i, ok := r.last[c.id]; ok {
			r.addReply(&r.tr.Steps[i], frame)
		}
		return
	}
	w := &c.pending[0]
	s := &r.tr.Steps[w.step]
	r.addReply(s, frame)
	if w.left--; w.left == 0 {
		c.pending = c.pending[1:]
		c.finished++
		r.finish(s)
		if r.clock != nil {
			s.Answered = r.clock.Now()
		}
	}
}

// send sends a request as step i. With wait false the step is only
// marked as sent (the build is gone).
func (r *runner) send(ev kavach.Event, i int, write bool) {
	s := &r.tr.Steps[i]
	c := r.dial(ev.Conn)
	s.Virtual, s.Ran, s.Wall = r.at(ev.Offset), true, time.Now()
	if r.clock != nil {
		s.Virtual = r.clock.Now()
	}
	r.last[ev.Conn] = i
	replies := 1
	if ev.Flags&kavach.ParseError == 0 {
		replies = r.opts.Codec.Replies(ev.Data)
	}
	if replies > 0 {
		c.pending = append(c.pending, waiting{step: i, left: replies})
	}
	if !write {
		return
	}
	if c.nc == nil {
		r.crashed(c, "could not connect: "+c.err.Error())
		return
	}
	data := ev.Data
	if r.opts.Prepare != nil && ev.Flags&kavach.ParseError == 0 {
		data = r.opts.Prepare(data)
	}
	c.nc.SetWriteDeadline(time.Now().Add(r.opts.StepTimeout))
	r.sent = true
	if _, err := c.nc.Write(data); err != nil {
		r.crashed(c, "write failed: "+err.Error())
	}
}

// hangUp closes c where the recorded client closed it. A step still
// waiting on it gets what it got: the client did not wait for more.
func (r *runner) hangUp(c *conn) {
	c.closed = true
	if c.nc != nil {
		c.nc.Close()
	}
	for _, w := range c.pending {
		r.finish(&r.tr.Steps[w.step])
	}
	c.pending = nil
}

func (r *runner) addReply(s *StepResult, frame []byte) {
	s.Responses = append(s.Responses, frame)
}

// finish classifies a step that got its replies.
func (r *runner) finish(s *StepResult) {
	if s.Outcome.Kind == "" {
		s.Outcome = r.opts.Classifier.Classify(r.reqs[s.N-1], s.Responses)
	}
}

// normalize fills in every step's Output.
func (r *runner) normalize() {
	for i := range r.tr.Steps {
		s := &r.tr.Steps[i]
		for _, resp := range s.Responses {
			s.Output = append(s.Output, Normalize(r.opts.Normalizer, r.reqs[i], resp))
		}
	}
}

// Normalize is n's view of a response, or its raw bytes as a string when
// n is nil.
func Normalize(n kavach.Normalizer, request, response []byte) any {
	if n == nil {
		return string(response)
	}
	return n.Normalize(request, response)
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
			s := &r.tr.Steps[w.step]
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
func (r *runner) exitSoon() *kavach.Exit {
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
