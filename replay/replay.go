// Package replay starts a build, drives a recording's events through it
// as they were recorded, under a virtual clock, and returns a trace: per
// step, the replies, the normalized output and the outcome. It owns the
// build process, its port and its clock; no process outlives a replay.
// It also holds what kavach replay and kavach diff share to judge a
// replay against its recording: the comparison (Compare), the noise
// (Noise, found where a replay differs from the recording), the rule for
// one step (CheckStep) and the read-back of spilled replays (ReadBack).
package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

// Options configure a replay. The zero value of every optional field is
// documented beside it.
type Options struct {
	// Integration starts the build, frames and classifies its replies,
	// and normalizes the output compared. Required.
	Integration kavach.Integration
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
	// Seed is the state each build starts from (a fixture's snapshot or
	// captured keys: docs/replay.md, "State"); nil: an empty build.
	Seed *kavach.Seed
	// SaveTo, if set, receives the build's state once the replay has run
	// every step with the build alive and idle, in its data file's format
	// (kavach.Abilities.SaveData): a checkpoint a later replay can start
	// from (Checkpoint). Trace.Saved counts its keys. Nil: none is taken.
	SaveTo io.Writer
	// SaveDir, if set, receives a copy of the build's state directory
	// ({state}: a build started from a fixture's state directory, whose
	// integration has no data file to save) once the replay has run every
	// step with the build alive and idle; the build is stopped first, so
	// that what it writes back on its way out is in it. A directory made
	// there: a checkpoint (Checkpoint). "": none is taken.
	SaveDir string
	// Inputs, if set, fingerprints the state each step after the failing
	// one is about to read, before it is sent (StepResult.Inputs). Nil:
	// none.
	Inputs *Inputs
}

// Inputs says which steps a replay fingerprints, and how. Every replay
// of a diff gets the same Inputs, so that their fingerprints compare.
type Inputs struct {
	// From is the failing step: the steps after it are fingerprinted, up
	// to Until (zero: every one).
	From, Until int
	// Keys are the keys step n touches; nil: unknown (the whole keyspace
	// is fingerprinted).
	Keys func(n int) []string
	// Fingerprint makes the probe, on a connection of the replay's own.
	Fingerprint *kavach.Fingerprinting
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
	// Network is how the build was kept off the network (NetworkIsolated,
	// or NetworkContained / NetworkShared and why the kernel refused);
	// empty when the build could not tell (an in-process fake).
	Network string `json:"network,omitempty"`
	// Window is the most steps the replay held at once: steps not yet
	// final, and those after them (Stream).
	Window int `json:"-"`
	// Saved is how many keys each database held when the build's state
	// was saved (Options.SaveTo), as the build counted them; nil when
	// none was saved.
	Saved map[int]int `json:"saved,omitempty"`
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
	// Inputs is the fingerprint of the state the step was about to read,
	// taken once every earlier reply came (or the build was idle without
	// it), right before the step was sent (Options.Inputs);
	// InputsError says why there is none where one was asked for.
	Inputs      map[string]string `json:"inputs,omitempty"`
	InputsError string            `json:"inputs_error,omitempty"`
	// Contained says why the step was not compared: Kavach withheld its
	// request from a build sharing the machine's network and answered it
	// itself (Responses holds that answer), or sent it with its reply
	// known to differ (kavach.Containment). Empty: sent and compared.
	Contained string `json:"contained,omitempty"`
	// Foreign: the step is a write of another client that did not come
	// through the recording's proxy (kavach.Foreign): sent, its reply
	// awaited before anything else, not compared.
	Foreign bool `json:"foreign,omitempty"`
	// Request is the request as sent (before Prepare).
	Request []byte `json:"-"`
	// Wall is the real time at which the request was sent.
	Wall time.Time `json:"-"`

	batched  bool // sent without waiting for the replies before it
	awaiting bool // sent waiting for replies (a step with none is done when sent)
}

// Run replays events against the build described by launch. It returns
// an error only when the replay could not happen (bad options, a build
// that does not start); a crash or hang during the replay is an outcome
// in the trace.
func Run(ctx context.Context, build kavach.Launch, events []kavach.Event, opts Options) (*Trace, error) {
	var all collect
	tr, err := Stream(ctx, build, Slice(events), opts, &all)
	if tr != nil {
		tr.Steps = all.steps
	}
	return tr, err
}

// Sink takes the steps of a streamed replay.
type Sink interface {
	// Step takes the next step, in step order, once it is final: its
	// replies, outcome and output will not change. Every step of the
	// recording comes, those the replay did not reach with Ran false.
	// An error stops the replay and is Stream's.
	Step(s StepResult) error
	// Restart forgets every step taken so far: the replay starts over.
	Restart()
}

type collect struct{ steps []StepResult }

func (c *collect) Step(s StepResult) error { c.steps = append(c.steps, s); return nil }
func (c *collect) Restart()                { c.steps = nil }

// Stream replays src against build as Run does, but keeps only a window
// of the recording and of the results: each step goes to sink as soon as
// it is final, and the trace it returns has no Steps. Memory does not
// grow with the recording's length (docs/replay.md, "Long recordings").
func Stream(ctx context.Context, build kavach.Launch, src Source, opts Options, sink Sink) (*Trace, error) {
	if opts.Integration == nil {
		return nil, errors.New("replay: Integration is required")
	}
	if opts.StepTimeout == 0 {
		opts.StepTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	began := time.Now()
	tr, again, err := run(ctx, build, src, opts, true, sink)
	if again && err == nil && ctx.Err() == nil {
		// The build died with pipelined steps unanswered: a build
		// answers a batch only once it has read it all, so those steps
		// lost replies that round trips would have had. Once more,
		// without batches.
		sink.Restart()
		tr, _, err = run(ctx, build, src, opts, false, sink)
	}
	if tr != nil {
		tr.Wall = time.Since(began)
	}
	return tr, err
}

// run is one replay; with batch, a connection's requests of one virtual
// millisecond are pipelined (makePlan). It reports whether the
// build died with such a batch unanswered.
func run(ctx context.Context, build kavach.Launch, src Source, opts Options, batch bool, sink Sink) (*Trace, bool, error) {
	tr := &Trace{Build: build, Clock: "virtual"}
	pl, err := makePlan(src, opts.Integration, opts.Start, batch && opts.Shift == nil)
	if err != nil {
		return nil, false, err
	}

	clock, dir, err := fakeClock(&build, opts, tr)
	if err != nil {
		return nil, false, err
	}
	if dir != "" {
		defer os.RemoveAll(dir)
		defer clock.Close()
	}

	proc, err := startSeeded(ctx, build, opts)
	if err != nil && ctx.Err() != nil {
		// Stopped by a signal before the build was up: an interrupted
		// replay with no step run, as one stopped later would be.
		tr.Stopped = "interrupted: " + context.Cause(ctx).Error()
		r := &runner{opts: opts, tr: tr, plan: pl, sink: sink, owe: newOweCounter(opts.Integration)}
		if r.src, err = src.Open(); err != nil {
			return nil, false, err
		}
		defer r.src.Close()
		r.stop = true
		return tr, false, r.finishAll()
	}
	if err != nil {
		return nil, false, err
	}
	defer func() {
		if clock != nil {
			// Its shutdown's timers run in real time again.
			clock.Release()
		}
		proc.Stop()
	}()
	if clock != nil && !clock.Loaded() {
		// Observed, not assumed: no process of the build mapped the
		// clock (a wrapper that clears the environment, a set-user-ID
		// program the loader will not preload into).
		tr.Clock = "real: the build never loaded the clock library (LD_PRELOAD did not reach it)"
		clock = nil
	}

	contain := network(proc, opts, tr)

	if identify := opts.Integration.Abilities().Identify; identify != nil {
		tr.Version = identify(ctx, build)
	} else {
		tr.Version = opts.Integration.Version(ctx, proc.Addr())
	}
	r := &runner{opts: opts, proc: proc, clock: clock, tr: tr, plan: pl, sink: sink, owe: newOweCounter(opts.Integration),
		conns: map[uint64]*conn{}, batch: batch, ctx: ctx, contain: contain, settleFn: opts.Integration.Abilities().Settle}
	if newIDs := opts.Integration.Abilities().NewIdentities; newIDs != nil {
		r.ids = newIDs()
	}
	if r.src, err = src.Open(); err != nil {
		return nil, false, err
	}
	defer r.src.Close()
	if p, ok := proc.(interface{ Pid() int }); ok {
		r.watch = watch{pid: p.Pid(), cache: &lookCache{}}
		defer r.watch.cache.close()
		r.standing = r.watch.members()
	}
	if opts.Perturb {
		r.rng = rand.New(rand.NewPCG(uint64(pl.events), 0x6b617661))
	}
	if in := opts.Inputs; in != nil && in.Fingerprint != nil {
		r.probe = in.Fingerprint.NewProbe(proc.Addr(), opts.StepTimeout)
		defer r.probe.Close()
	}
	defer r.closeAll()
	if clock != nil {
		// The build is up: from here on its clocks move only with the
		// recording.
		clock.Freeze()
	}
	r.run(ctx)
	if e := proc.Exited(); e != nil && tr.Exit == nil {
		tr.Exit = e
	}
	if (opts.SaveTo != nil || opts.SaveDir != "") && !r.lostBatch {
		if err := r.save(ctx); err != nil {
			return nil, false, fmt.Errorf("replay: checkpoint of build %s: %w", build.Path, err)
		}
	}
	tr.Window = r.maxWin
	if err := r.finishAll(); err != nil {
		return nil, false, err
	}
	return tr, r.lostBatch, nil
}

// fakeClock gives build a virtual clock (the clock library preloaded,
// its page named in the environment), or real time where the options ask
// for it, said in tr.Clock. A build whose clock cannot be virtual is
// refused before anything runs, saying why (Fakeable). dir, when not
// empty, is the clock's directory, the caller's to remove once the clock
// is closed.
func fakeClock(build *kavach.Launch, opts Options, tr *Trace) (clock *Clock, dir string, err error) {
	if opts.RealTime {
		tr.Clock = "real: asked for real time"
		return nil, "", nil
	}
	if fakeable, why := Fakeable(build.Path); !fakeable {
		return nil, "", fmt.Errorf("replay: %s: %s (replay it in real time with --real-time, if its timing does not matter)", build.Path, why)
	}
	lib, err := ClockLibrary()
	if err != nil {
		return nil, "", fmt.Errorf("replay: %w", err)
	}
	dir, err = os.MkdirTemp(clockDir(), launch.DirPattern("clock"))
	if err != nil {
		return nil, "", fmt.Errorf("replay: clock directory: %w", err)
	}
	if clock, err = NewClock(dir, opts.Start); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	build.Env = append(append([]string(nil), build.Env...), clock.Env(lib)...)
	return clock, dir, nil
}

// network sets tr.Network to the network mode the build was started in,
// and returns the containment its requests go through when it shares the
// machine's network (nil: none).
func network(proc kavach.Process, opts Options, tr *Trace) kavach.Containment {
	sh, ok := proc.(interface{ Shared() bool })
	if !ok {
		return nil
	}
	tr.Network = NetworkIsolated
	if !sh.Shared() {
		return nil
	}
	why := " (namespaces refused: " + launch.IsolationReason() + ")"
	tr.Network = NetworkShared + why
	if newContainment := opts.Integration.Abilities().NewContainment; newContainment != nil && !launch.TrustNetwork() {
		tr.Network = NetworkContained + why
		return newContainment()
	}
	return nil
}

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
	dirty   []*conn
	polled  []*conn
	rng     *rand.Rand   // timing perturbation (Options.Perturb); nil: none
	probe   kavach.Probe // fingerprints inputs (Options.Inputs); nil: none
	stop    bool
	ctx     context.Context // done: a signal; every wait ends
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

// conn is one client connection to the build, with a reader that frames
// replies onto a queue.
type conn struct {
	id       uint64
	idx      int  // its place in runner.order
	dirty    bool // in runner.dirty (guarded by runner.dirtyMu)
	nc       net.Conn
	mu       sync.Mutex
	frames   [][]byte
	err      error       // set when the reader ended
	reading  atomic.Bool // the reader holds bytes it has not framed yet
	pending  []waiting   // steps waiting for replies, oldest first
	finished int         // steps on this conn that got all their replies
	pushes   int         // pushes taken in on this conn (IsPush)
	deferred []int       // events held back until the replies they follow arrive
	closed   bool        // closed by the replay (the recorded client closed it)
	ended    bool        // its reader ended and every reply it framed is attached
	broken   bool        // ended by the build
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
func (r *runner) pop() {
	s := &r.steps[0]
	if s.Ran && s.Outcome.Kind == "" {
		r.finish(s)
	}
	for _, resp := range s.Responses {
		s.Output = append(s.Output, r.opts.Integration.Normalize(s.Request, resp))
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
	r.poll()
	// With one connection open, whose replies all came, the build has
	// nowhere else to send anything: no need to look at it.
	if r.open() > 1 {
		if busy, stopped := r.watch.glance(); busy || stopped {
			return false, stopped && !busy
		}
	}
	n := r.frames.Load()
	if r.unread() || n != r.taken {
		return false, false
	}
	// A reader that has just read bytes marks them only once its read
	// returns: give it the processor once, and look again.
	runtime.Gosched()
	return !r.unread() && r.frames.Load() == n, false
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
		if busy, stopped := r.watch.look(); busy || stopped || r.unread() {
			// A stopped build (SIGSTOP, a tracer) is not idle: what it
			// was sent is not done, and it answers nothing until it runs.
			return false
		}
		pause(100 * time.Microsecond)
		if r.frames.Load() != n || len(r.wake) > 0 {
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

func (r *runner) dial(id uint64) *conn {
	if c := r.conns[id]; c != nil {
		return c
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
			m, serr := r.opts.Integration.SplitResponse(data)
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
	r.markDirty(c)
	r.frames.Add(1)
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
