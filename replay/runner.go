package replay

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kavach-dev/kavach"
)

// runner drives one replay. docs/replay.md ("Order", "Time that flows")
// explains the rules it follows.
type runner struct {
	opts  Options
	proc  kavach.Process
	watch watch
	// settleFn is the integration's Settle, asked once (Abilities makes
	// a fresh set on every call).
	settleFn func(from, to time.Time, blocked bool) bool
	// standing is the build's process tree as last seen whole and alive:
	// a connection the build closes while that tree still stands, none of
	// it exiting, was closed on purpose (docs/replay.md, "Closed
	// connections").
	standing []int
	clock    *Clock
	tr       *Trace
	plan     *plan
	conns    map[uint64]*conn
	order    []*conn        // conns in order of opening: deterministic iteration
	last     map[uint64]int // conn -> index of its latest step

	// The window: the recording is read as it is played, and only the
	// events from the oldest one still to be played (held back, or the
	// next) and the steps from the oldest one not yet final are kept.
	src     Events
	eof     bool
	srcErr  error
	evs     []event // events evBase, evBase+1, ...
	evBase  int
	steps   []StepResult // steps stBase, stBase+1, ...
	stBase  int
	nsteps  int // steps read so far
	owe     *oweCounter
	sink    Sink
	sinkErr error
	maxWin  int // the most steps the window held (tests)

	batch bool // pipeline batches at all
	sent  bool // a request went out since the build was last seen idle
	// unconfirmed: since the build was last seen idle, a request went out
	// that no reply will confirm (the codec expects none) or a connection
	// was closed: only the build going idle says it was taken in.
	unconfirmed bool
	// lastConn is the connection the last request went out on (takenIn).
	lastConn  *conn
	taken     int64         // frames (and ends) poll has taken from the readers
	lostBatch bool          // the build ended a connection with batched steps unanswered
	shift     time.Duration // the clock variant's shift now in force
	jump      bool          // the shift changed: the clock may go back
	wake      chan struct{} // a reader framed a reply, or its connection ended
	frames    atomic.Int64  // replies framed by readers so far
	// dirty are the connections whose readers framed a reply or ended
	// since poll last looked, each once (conn.dirty): poll looks at
	// those, not at every connection the replay opened (Redis's suite
	// opens 959; looking at all of them before each event cost seconds).
	dirtyMu sync.Mutex
	// inline is the connection the runner reads itself, if any
	// (inline.go): the only one open.
	inline *conn
	dirty  []*conn
	polled []*conn
	rng    *rand.Rand   // timing perturbation (Options.Perturb); nil: none
	probe  kavach.Probe // fingerprints inputs (Options.Inputs); nil: none
	stop   bool
	ctx    context.Context // done: a signal; every wait ends
	// contain withholds requests from a build that shares the machine's
	// network (kavach.Abilities.NewContainment); nil: every request is sent.
	contain kavach.Containment
	// ids maps the recording's connection ids to the build's
	// (kavach.Abilities.NewIdentities); nil: requests go as recorded.
	// unlearnt are the steps that showed an id whose recorded reply is
	// in and whose replayed reply is not yet.
	ids      kavach.Identities
	unlearnt []unlearnt
	// playing is the recorded offset of the event being played (for a
	// reply, of the next event): the latest time the recording had
	// reached while the replay waits there (catchUp).
	playing time.Duration
	// batchOwed are replies of a pipelined run (batched response
	// events) not waited for yet: by connection, the steps it owes.
	batchOwed []unlearnt
}

type unlearnt struct {
	c *conn
	n int // the step's number among c's steps with replies
}

// conn is one client connection to the build, with a reader goroutine
// that frames replies onto a queue, or read by the runner itself
// (inline: inline.go).
type conn struct {
	id      uint64
	idx     int  // its place in runner.order
	dirty   bool // in runner.dirty (guarded by runner.dirtyMu)
	nc      net.Conn
	mu      sync.Mutex
	frames  [][]byte
	err     error       // set when the reader ended
	reading atomic.Bool // the reader holds bytes it has not framed yet
	// inline: the runner reads it itself (inline.go); fd, fr and buf
	// are its descriptor, the bytes of a reply not yet whole, and the
	// buffer it reads into.
	inline bool
	fd     int
	fr     framer
	buf    []byte
	// drained: the inline connection was last read to the end
	// (inline.go).
	drained  bool
	pending  []waiting // steps waiting for replies, oldest first
	finished int       // steps on this conn that got all their replies
	pushes   int       // pushes taken in on this conn (IsPush)
	deferred []int     // events held back until the replies they follow arrive
	closed   bool      // closed by the replay (the recorded client closed it)
	ended    bool      // its reader ended and every reply it framed is attached
	broken   bool      // ended by the build
	// sentN counts the steps sent on it that wait for replies; shows
	// holds, by that count, the steps whose replies show a connection
	// id (Identities.Shows), until both their replies are in.
	sentN int
	shows map[int]*shownID
}

// shownID is a step whose reply shows a connection id, with that reply
// as recorded and as replayed, each nil until it is in.
type shownID struct {
	request            []byte
	recorded, replayed []byte
}

type waiting struct {
	step int // index into trace steps
	left int
}

func (r *runner) run(ctx context.Context) {
	r.last = map[uint64]int{}
	r.wake = make(chan struct{}, 1)
	for i := 0; r.has(i); i++ {
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
		r.emit()
		if i%256 == 0 {
			r.trim(i + 1)
		}
	}
	r.drain(ctx)
}

// event is one event of the window, with what the plan and the counting
// so far say of it.
type event struct {
	kavach.Event
	step    int // index of the step it starts; -1: not a request
	owed    int // steps of its conn the recording had answered before it (owed)
	push    int // a push: the nth the recording had on its conn; 0: not a push
	batched bool
}

// has reports whether the recording has an event i, reading it into the
// window if need be.
func (r *runner) has(i int) bool {
	for i >= r.evBase+len(r.evs) {
		if r.eof {
			return false
		}
		r.readEvent()
	}
	return i >= r.evBase
}

// ev is event i of the window (has(i) was true).
func (r *runner) ev(i int) *event { return &r.evs[i-r.evBase] }

// step is step i of the window.
func (r *runner) step(i int) *StepResult { return &r.steps[i-r.stBase] }

func (r *runner) readEvent() {
	ev, err := r.src.Next()
	if err != nil {
		r.eof = true
		if err != io.EOF {
			r.srcErr, r.stop = err, true
		}
		return
	}
	i := r.evBase + len(r.evs)
	e := event{Event: ev, step: -1, batched: i < r.plan.events && r.plan.isBatched(i)}
	e.owed, e.push = r.owe.add(ev)
	if ev.Dir == kavach.Request {
		e.step = r.nsteps
		r.nsteps++
		r.steps = append(r.steps, StepResult{N: r.nsteps, Conn: ev.Conn, Responses: [][]byte{}, Output: []any{}, Request: ev.Data,
			Foreign: ev.Flags&kavach.Foreign != 0})
		r.maxWin = max(r.maxWin, len(r.steps))
	}
	r.evs = append(r.evs, e)
}

// trim drops the events before next that no connection holds back.
func (r *runner) trim(next int) {
	lo := next
	for _, c := range r.order {
		if len(c.deferred) > 0 && c.deferred[0] < lo {
			lo = c.deferred[0]
		}
	}
	k := lo - r.evBase
	if k <= 0 || k < len(r.evs)/2 && k < 4096 {
		return
	}
	n := copy(r.evs, r.evs[k:])
	clear(r.evs[n:])
	r.evs = r.evs[:n]
	r.evBase += k
}

// final reports whether step i will not change any more: it ran and has
// its outcome (or waits for no reply), and no reply can still be
// attached to it (a later step of its connection was sent, or the
// connection ended).
func (r *runner) final(i int) bool {
	s := r.step(i)
	if !s.Ran || s.Outcome.Kind == "" && s.awaiting {
		return false
	}
	if r.last[s.Conn] != i {
		return true
	}
	c := r.conns[s.Conn]
	return c == nil || c.nc == nil || c.ended
}

// emit hands the final steps at the front of the window to the sink.
func (r *runner) emit() {
	for len(r.steps) > 0 && r.sinkErr == nil && r.final(r.stBase) {
		r.pop()
	}
}

// pop hands the window's first step to the sink, finished and normalized.
// A Spill keeps replies, not what they normalize to (its reader
// normalizes them when it reads them back): for it, nothing is
// normalized here, between one reply and the next request, only to be
// thrown away.
func (r *runner) pop() {
	s := &r.steps[0]
	if s.Ran && s.Outcome.Kind == "" {
		r.finish(s)
	}
	if _, spilled := r.sink.(*Spill); !spilled {
		for _, resp := range s.Responses {
			s.Output = append(s.Output, r.opts.Integration.Normalize(s.Request, resp))
		}
	}
	if r.sinkErr == nil {
		if err := r.sink.Step(*s); err != nil {
			r.sinkErr, r.stop = err, true
		}
	}
	r.steps[0] = StepResult{}
	r.steps = r.steps[1:]
	r.stBase++
	if len(r.steps) == 0 {
		r.steps = r.steps[:0:0] // let the old backing array go
	}
}

// finishAll ends a replay: every step left in the window goes to the
// sink, then every step the replay did not reach, not run.
func (r *runner) finishAll() error {
	for len(r.steps) > 0 {
		r.pop()
	}
	for !r.eof && r.sinkErr == nil {
		r.readEvent()
		for len(r.steps) > 0 {
			r.pop()
		}
		r.evs, r.evBase = r.evs[:0], r.evBase+len(r.evs)
	}
	if r.srcErr != nil {
		return r.srcErr
	}
	return r.sinkErr
}
