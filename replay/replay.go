// Package replay starts a build, drives a recording's events through it
// as they were recorded, under a virtual clock, and returns a trace: per
// step, the replies, the normalized output and the outcome. It owns the
// build process, its port and its clock; no process outlives a replay.
// It also holds what kavach replay and kavach diff share to judge a
// replay against its recording: the comparison (Compare), the noise
// (Noise, found where a replay differs from the recording), the rule for
// one step (CheckStep) and the read-back of spilled replays (ReadBack).
//
// The replay itself: replay.go (the options, the trace and the entry
// points), runner.go (the runner and its window of events and steps),
// play.go (playing one event: a request, a reply, a held-back event),
// settle.go (moving the clock and waiting for the build to take it in),
// waits.go (waiting for replies and deciding when a step hangs) and
// conns.go (the connections to the build: dialing, reading, attaching
// replies to steps, sending, closing, and the build's exit).
package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
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
