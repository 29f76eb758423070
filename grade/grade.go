package grade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/invariants"
	"github.com/kavach-dev/kavach/replay"
)

// Options configure a diff. The zero value of every optional field is
// documented beside it.
type Options struct {
	Integration kavach.Integration // required
	// StepTimeout bounds each reply; zero means 5 s.
	StepTimeout time.Duration
	// Prepare rewrites requests before sending (secrets). Nil: none.
	Prepare func(request []byte) []byte
	// Variants is how many variants to generate; MinVariants how many
	// must reproduce the failure for a verdict of fixed. Seed seeds the
	// generator.
	Variants, MinVariants int
	Seed                  uint64
	// Jobs is how many replays run at once; zero means the CPUs this
	// process may use (NewPool).
	Jobs int
	// Pool, if set, is the limit on builds running at once that this diff
	// shares with others (a suite's, RunSuite); Jobs is then its size.
	// Nil: a pool of Jobs of the diff's own.
	Pool *Pool
	// Memo, if set, remembers the old build's replays of variants for
	// the other diffs given it (NewMemo): several new builds graded
	// against one old build and fixture replay each variant on the old
	// build once. Nil: every diff replays its own.
	Memo *Memo
	// OldRuns is how many times the old build is replayed to find noise;
	// zero means 3. The last of them (when there are two or more) runs
	// with its timing perturbed (replay.Options.Perturb), so that an
	// answer that depends on the machine's load shows as noise.
	OldRuns int
	// Confirm is how many more times the old build is replayed when the
	// new build's answer to a step differs from the recording where the
	// OldRuns replays showed no noise: a difference the old build also
	// gives, asked again, is the old build's noise, not a finding
	// (docs/diff.md, "Noise"). It is asked again so, up to 4 times, while
	// the last time turned a difference into noise. Zero means 4;
	// negative: never.
	Confirm int
	// Progress, if set, is told each time a replay (or a variant) finishes.
	Progress func(done, total int)
	// FailFast stops running variants on the new build after the first
	// one it fails.
	FailFast bool
	// Invariants are checked on every step of the new build's replays and
	// of the old build's (for an invariant failure oracle). Nil: none.
	Invariants *invariants.Set
	// InvariantsFile is recorded in the report's options.
	InvariantsFile string
	// BelowFloor grades with options below the fixture's floor (its
	// Header.Floor), which Run refuses otherwise; such a diff is never
	// fixed (Derive).
	BelowFloor bool
	// StartTimeout is recorded in the report's options; the Integration
	// applies it.
	StartTimeout time.Duration
	// LongSteps: a fixture of more steps than this, or a long Recording
	// (read from its file as it is replayed), is graded as a long
	// recording (docs/diff.md, "Long recordings"). Zero means
	// DefaultLongSteps.
	LongSteps int
	// Window is, for a long recording, how many steps before and after
	// the failing step its variants replay. Zero means DefaultWindow.
	Window int
	// NoCheckpoints replays every step of every variant, none started
	// from a checkpoint (docs/variants.md, "Checkpoints"; kavach diff
	// --checkpoints=false): for the side-by-side figure, and as a way
	// out. The variants run are the same.
	NoCheckpoints bool
	// CheckpointSteps is how many steps must come before the step a
	// variant changes for it to start from a checkpoint; zero means
	// DefaultCheckpointSteps.
	CheckpointSteps int
	// stepOf maps a step of the window or slice the variants are made
	// from to the fixture's (variants.Options.StepOf); nil: the variants
	// are made from the fixture.
	stepOf func(int) int
	// memoScope is the digest of the fixture's header, in Memo's keys:
	// the integration's settings (its environment, what it leaves out of
	// a reply) are made from the header, and a Memo's key holds only the
	// integration's type.
	memoScope string
}

// Run grades the new build against the fixture (docs/design.md §4) and returns
// the report. An error means Kavach could not grade: a fixture with no
// failure, a build that does not start.
//
// Its phases, in order (docs/design.md, "How a verdict is made"): open the
// recording (newDiff), find the keys its steps touch (findKeys),
// replay the builds (replayBuilds), gather the evidence (gatherEvidence),
// check the invariants (addInvariants), run the variants (runVariants),
// and derive the verdict from the evidence alone (Derive, in rules.go).
func Run(ctx context.Context, rec *fixtures.Recording, old, new kavach.Launch, opts Options) (*Report, error) {
	began := time.Now()
	d, err := newDiff(rec, old, new, opts)
	if err != nil {
		return nil, err
	}
	seed, removeSeed, err := d.fx.OpenSeed()
	if err != nil {
		return nil, err
	}
	defer removeSeed()
	d.ropts.Seed = seed
	if seed != nil && seed.Dir != "" {
		// Every start of a build, not only its replays' (the old build
		// asked the steps' keys), gets a copy of the state directory.
		d.old.State, d.new.State = seed.Dir, seed.Dir
	}
	if err := d.findKeys(ctx); err != nil {
		return nil, err
	}
	rs, err := d.replayBuilds(ctx)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	ev, tr, err := d.gatherEvidence(rs)
	if err != nil {
		return nil, err
	}
	for round, left := 0, countedDiffs(ev); d.opts.Confirm > 0 && left > 0 && round < confirmRounds; round++ {
		if err := d.confirm(ctx, rs); err != nil {
			return nil, err
		}
		if ev, tr, err = d.gatherEvidence(rs); err != nil {
			return nil, err
		}
		was := left
		if left = countedDiffs(ev); left == was {
			break // asked again, the old build gave none of them: they stand
		}
	}
	d.addInvariants(&ev, tr)
	vstart := time.Now()
	if err := d.runVariants(ctx, &ev); err != nil {
		return nil, err
	}
	return d.report(ev, rs, time.Since(vstart), began), nil
}

// diff is one run of Run: what it was asked, and what each phase leaves
// for the next.
type diff struct {
	fx       *fixtures.Fixture // the recording's fixture (its records only when long)
	old, new kavach.Launch
	opts     Options
	ropts    replay.Options // how every replay runs
	rec      *recording
	long     bool
	failure  kavach.Failure // zero for a contract
	contract bool           // the fixture has no failure: every step is held to the recording
	// win is, for a long recording, the window of it its variants replay:
	// around the failing step (the last steps of a contract).
	win *window
	// keys and writes are steps' keys and the keys they may write, and
	// replaces those they replace whole (learnKeys): keys[keyOf(n)] are
	// step n's.
	keys, writes, replaces [][]string
	keyOf                  func(n int) int
	// group and groupCommands are the failing command's group as the old
	// build documents it, and its commands (learnKeys).
	group         string
	groupCommands []string
	// confirming is how many replays of the old build confirm asked for.
	confirming int
}

// newDiff checks what Run was asked, with its options' defaults, and
// opens the recording.
func newDiff(in *fixtures.Recording, old, new kavach.Launch, opts Options) (*diff, error) {
	fx := in.Fixture()
	if opts.Integration == nil {
		return nil, fmt.Errorf("grade: Integration is required")
	}
	if below := fx.Header.Floor.Below(opts.Variants, opts.MinVariants, opts.Seed); len(below) > 0 && !opts.BelowFloor {
		return nil, &BelowFloorError{Below: below}
	}
	opts.StepTimeout = cmp.Or(opts.StepTimeout, 5*time.Second)
	if opts.Pool == nil {
		opts.Pool = NewPool(opts.Jobs)
	}
	opts.Jobs = opts.Pool.Size()
	if opts.OldRuns <= 0 {
		opts.OldRuns = 3
	}
	if opts.Confirm == 0 {
		opts.Confirm = 4
	}
	if opts.LongSteps <= 0 {
		opts.LongSteps = DefaultLongSteps
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Memo != nil {
		opts.memoScope = headerDigest(fx.Header)
	}
	d := &diff{fx: fx, old: old, new: new, opts: opts, keyOf: func(n int) int { return n - 1 }}
	d.rec, d.long = newRecording(in, opts.LongSteps)
	d.contract = fx.Failure == nil
	switch {
	case d.contract && d.rec.Len() == 0:
		return nil, fmt.Errorf("fixture %s has no steps: a contract needs recorded traffic", fx.Path)
	case !d.contract && (fx.Failure.Step < 1 || fx.Failure.Step > d.rec.Len()):
		return nil, fmt.Errorf("fixture %s: its failure is at step %d, but it has steps 1 to %d", fx.Path, fx.Failure.Step, d.rec.Len())
	case !d.contract:
		d.failure = *fx.Failure
	}
	if name := d.failure.Oracle.Invariant; name != "" && (opts.Invariants == nil || !opts.Invariants.Has(name)) {
		return nil, fmt.Errorf("fixture %s: its failure is invariant %q, which no invariants file given declares: pass --invariants FILE", fx.Path, name)
	}
	d.ropts = replay.Options{
		Integration: opts.Integration,
		StepTimeout: opts.StepTimeout, Start: fx.Header.Start, Prepare: opts.Prepare,
	}
	return d, nil
}

// findKeys cuts a long recording's window, and asks the old build
// for every step's keys: those after the failure for judging them, those
// before it for where the variants go (docs/variants.md). A long
// recording's are the window's: a step after it has its keys unknown.
func (d *diff) findKeys(ctx context.Context) error {
	f, n := d.failure.Step, d.rec.Len()
	if d.long {
		first, last := max(1, f-d.opts.Window), min(n, f+d.opts.Window)
		if d.contract {
			first, last = max(1, n-2*d.opts.Window+1), n
		}
		var err error
		if d.win, err = cutWindow(d.rec.src, d.opts.Integration, first, last); err != nil {
			return err
		}
	}
	if d.contract || !(f < n || d.opts.Variants > 0 && f <= n) {
		return nil
	}
	var l Learned
	if d.win != nil {
		l = learnKeys(ctx, d.win.steps, f, d.old, d.opts)
		first := d.win.first
		d.keyOf = func(n int) int { return n - first }
	} else {
		l = learnKeys(ctx, d.rec.Steps(), f, d.old, d.opts)
	}
	d.keys, d.writes, d.replaces, d.group, d.groupCommands = l.Keys, l.Writes, l.Replaces, l.Group, l.GroupCommands
	return nil
}

// replays are the old build's replays of the recording (OldRuns of them,
// the last perturbed) and the new build's, each spilled to a file (the
// traces hold no steps), and how each was judged after the failure.
type replays struct {
	oldRuns   []*replay.Trace
	newRun    *replay.Trace
	spills    []*replay.Spill // the old runs', then the new run's
	durations []time.Duration // likewise
	// inputs is the rule that judges the steps after the failure:
	// RuleObserved when every replay fingerprinted them, else
	// RuleInferred and why not; "" when there are none.
	inputs string
	// what the old build's replays replayed, and how, for confirm's.
	src  replay.Source
	opts replay.Options
	old  kavach.Launch
}

func (rs *replays) close() {
	for _, sp := range rs.spills {
		sp.Close()
	}
}

// replayBuilds replays the recording on the old build OldRuns times and
// on the new build once, at most Jobs at a time. After the failing step,
// every replay fingerprints the state each step is about to read, where
// the integration can (docs/diff.md, "After the failure"); the variants'
// replays do not.
func (d *diff) replayBuilds(ctx context.Context) (*replays, error) {
	mainOpts, mainOld, mainNew, inputs := d.fingerprinting()
	launches := make([]kavach.Launch, 0, d.opts.OldRuns+1)
	for i := 0; i < d.opts.OldRuns; i++ {
		launches = append(launches, mainOld)
	}
	launches = append(launches, mainNew)
	// One plan of the recording, shared by the replays.
	n := len(launches)
	src := replay.Shared(d.rec.src)
	heads, spills, durations, err := runAll(ctx, launches, src, mainOpts, d.opts.Pool, d.opts.Progress,
		func(i int) string { return which(i, n) })
	if err != nil {
		return nil, err
	}
	runs := d.opts.OldRuns
	return &replays{oldRuns: heads[:runs], newRun: heads[runs], spills: spills, durations: durations, inputs: inputs,
		src: src, opts: mainOpts, old: mainOld}, nil
}

// countedDiffs counts the differences from the recording that Derive
// makes findings of on this evidence (diverged: before the failing step,
// or anywhere in a contract), the old build's noise left out. Evidence on
// which Derive finds nothing to grade (an old build that does not
// reproduce or replay its recording) counts none: asking the old build
// again could not change its verdict.
func countedDiffs(ev Evidence) int {
	_, findings := Derive(ev)
	n := 0
	for _, f := range findings {
		if f.Kind == Diverged && (ev.Contract || f.Step < ev.Failure.Step) {
			n += len(f.Diffs)
		}
	}
	return n
}

// confirmRounds bounds how many times a diff asks the old build again
// (Confirm replays each time): it asks once more only while the last
// time turned a difference into noise.
const confirmRounds = 4

// confirm replays the recording on the old build Confirm more times, as
// its first replays ran (one of them perturbed), and adds them to
// rs's: a step the new build answers otherwise than the recording, where
// the first replays all answered as recorded, may be one whose answer
// the old build draws at random too (two keys that expire in the same
// millisecond, listed in the order of a hash table seeded at random per
// process: 50/50, so three replays agree with the recording one time in
// eight). Asking the old build again observes that, where an inference
// from three replays could not; a difference the old build never gives
// stays a finding.
func (d *diff) confirm(ctx context.Context, rs *replays) error {
	k := d.opts.Confirm
	launches := make([]kavach.Launch, k)
	for i := range launches {
		launches[i] = rs.old
	}
	heads, spills, durations, err := runAll(ctx, launches, rs.src, rs.opts, d.opts.Pool, d.opts.Progress,
		func(int) string { return "old (asked again)" })
	if err != nil {
		return err
	}
	n := d.opts.OldRuns
	rs.oldRuns = append(rs.oldRuns, heads...)
	rs.spills = slices.Insert(rs.spills, n, spills...)
	rs.durations = slices.Insert(rs.durations, n, durations...)
	d.opts.OldRuns += k
	d.confirming += k
	return nil
}

// fingerprinting is how the builds are replayed to fingerprint the steps
// after the failure: the replay options and the launches that do, and
// the rule that will judge those steps (replays.inputs).
func (d *diff) fingerprinting() (replay.Options, kavach.Launch, kavach.Launch, string) {
	f := d.failure.Step
	if d.contract || f >= d.rec.Len() {
		return d.ropts, d.old, d.new, ""
	}
	fp := d.opts.Integration.Abilities().Fingerprint
	if fp == nil {
		return d.ropts, d.old, d.new, RuleInferred + ": the integration cannot fingerprint a build's state"
	}
	requests := func(yield func([]byte) bool) {
		d.rec.EachStep(func(s kavach.Step) error {
			if !yield(s.Request.Data) {
				return errStop
			}
			return nil
		})
	}
	o, whyOld := fp.Launch(d.old, requests)
	n, whyNew := fp.Launch(d.new, requests)
	if why := cmp.Or(whyOld, whyNew); why != "" {
		return d.ropts, d.old, d.new, RuleInferred + ": " + why
	}
	// A long recording's steps are fingerprinted within its window after
	// the failure; later ones get the inferred rule.
	until := 0
	if d.long {
		until = f + d.opts.Window
	}
	ropts := d.ropts
	ropts.Inputs = &replay.Inputs{From: f, Until: until, Fingerprint: fp, Keys: func(n int) []string {
		if i := d.keyOf(n); i >= 0 && i < len(d.keys) {
			return d.keys[i]
		}
		return nil
	}}
	return ropts, o, n, RuleObserved
}

// traces are the first old replay's steps and the new replay's, kept for
// the invariants (only they need whole traces).
type traces struct{ old, new replay.Trace }

// gatherEvidence reads the replays back step by step beside the
// recording: the noise (where the old build's replays differ from the
// recording), and each step's evidence.
func (d *diff) gatherEvidence(rs *replays) (Evidence, *traces, error) {
	ev := d.newEvidence(rs)
	noise := replay.Noise{}
	tr := &traces{}
	// ReadBack gives each step as a copy of its own: a streamed step's
	// data is the file's block, valid during the call only.
	err := replay.ReadBack(d.rec.EachStep, rs.spills, d.opts.Integration, replayName(d.opts.OldRuns), func(s kavach.Step, got []replay.StepResult) error {
		oldSteps, newStep := got[:d.opts.OldRuns], got[d.opts.OldRuns]
		if d.opts.Invariants != nil {
			tr.old.Steps = append(tr.old.Steps, oldSteps[0])
			tr.new.Steps = append(tr.new.Steps, newStep)
		}
		d.addStep(&ev, s, noise, oldSteps, newStep)
		return nil
	})
	return ev, tr, err
}

// newEvidence is the evidence before any step is read back.
func (d *diff) newEvidence(rs *replays) Evidence {
	o, n := rs.oldRuns[0], rs.newRun
	ev := Evidence{
		Failure:      d.failure,
		Contract:     d.contract,
		StateLacking: d.fx.StateLacking(),
		OrderUnknown: d.fx.OrderUnknown(),
		Noise:        []replay.NoiseField{},
		Old:          OldEvidence{Runs: d.opts.OldRuns, Confirming: d.confirming, Clock: o.Clock, Stopped: o.Stopped},
		New:          NewEvidence{Clock: n.Clock, Stopped: n.Stopped, Exit: n.Exit},
		Variants:     VariantsEvidence{Min: d.opts.MinVariants, List: []VariantEvidence{}},
		Invariants:   []InvariantEvidence{},
		Inputs:       rs.inputs,
	}
	if fl := d.fx.Header.Floor; fl != nil {
		ev.Floor = &FloorEvidence{Floor: *fl, Variants: d.opts.Variants, MinVariants: d.opts.MinVariants, Seed: d.opts.Seed}
	}
	return ev
}

// addStep adds recorded step s to the evidence, as the old build's
// replays (olds, the first listed) and the new build's (got) gave it, and
// its noise to noise.
func (d *diff) addStep(ev *Evidence, s kavach.Step, noise replay.Noise, olds []replay.StepResult, got replay.StepResult) {
	f, contract := d.failure.Step, d.contract
	want := replay.RecordedStep(s, d.opts.Integration)
	noise.AddStep(want, olds...)
	seen := noise.SeenStep(want, olds...)
	ev.Noise = append(ev.Noise, seen...)
	o := olds[0]
	// Steps of a long recording before the window that reproduce the
	// recording exactly on the old and the new build are counted, not
	// listed (Evidence.Omitted). Invariants, decided after, keep them all.
	if d.win != nil && d.opts.Invariants == nil && s.N < d.win.first && (contract || s.N < f) &&
		len(seen) == 0 && o.Ran && got.Ran && sameKind(o.Outcome, want.Outcome) && sameKind(got.Outcome, want.Outcome) && len(replay.Compare(want, got)) == 0 {
		ev.Omitted++
		return
	}
	req := d.opts.Integration.DescribeRequest(s.Request.Data, 200)
	oe := StepEvidence{Step: s.N, Request: req, Ran: o.Ran, Recorded: want.Outcome, Outcome: o.Outcome, Contained: o.Contained, Foreign: want.Foreign}
	se := StepEvidence{Step: s.N, Request: req, Ran: got.Ran, Recorded: want.Outcome, Outcome: got.Outcome, Output: got.Output,
		Conn: s.Conn(), AtUS: s.Request.Offset.Microseconds(), Contained: got.Contained, Foreign: want.Foreign}
	if kin := d.opts.Integration.Abilities().Kin; kin != nil && !contract && s.N >= f {
		var family []string
		se.Command, family = kin(s.Request.Data)
		if s.N == f {
			ev.FailureFamily, ev.FailureGroup = family, d.group
			for _, c := range d.groupCommands {
				if !slices.Contains(ev.FailureFamily, c) {
					ev.FailureFamily = append(ev.FailureFamily, c)
				}
			}
		}
	}
	if !contract && s.N > f {
		// After the failure the old build's answer and inputs are kept: an
		// explained step shows them beside the new build's.
		oe.Output, oe.Inputs = o.Output, o.Inputs
		se.Inputs, se.InputsError, se.InputsNoise = got.Inputs, got.InputsError, inputsNoise(olds)
		for j, oj := range olds {
			if oj.Ran && oj.Inputs == nil && se.InputsError == "" {
				// An old replay without a fingerprint cannot say which
				// fields are its noise: the step is not compared by them.
				se.Inputs, se.InputsError = nil, fmt.Sprintf("old build, replay %d: %s", j+1, cmp.Or(oj.InputsError, "no fingerprint"))
			}
		}
	}
	ev.Old.Steps = append(ev.Old.Steps, oe)
	if !contract && s.N >= f {
		d.addKeys(&se)
	}
	if got.Ran && got.Contained == "" && !want.Foreign {
		se.Diffs = replay.Compare(want, got)
		if len(se.Diffs) > 0 && len(want.Output) > 0 {
			se.RecordedOutput = want.Output
		}
	}
	ev.New.Steps = append(ev.New.Steps, se)
}

// addKeys sets the keys a step from the failing one on touches, and those
// it may write, as findKeys learned them.
func (d *diff) addKeys(se *StepEvidence) {
	i := d.keyOf(se.Step)
	se.KeysUnknown = i < 0 || i >= len(d.keys) || d.keys[i] == nil
	if !se.KeysUnknown {
		se.Keys = d.keys[i]
	}
	if i >= 0 && i < len(d.writes) && d.writes[i] != nil {
		se.Writes, se.WritesKnown = d.writes[i], true
	}
}

// addInvariants checks the invariants on the first old replay and the new
// one, and adds their results to the evidence.
func (d *diff) addInvariants(ev *Evidence, tr *traces) {
	oldInv := checkInvariants(d.opts.Invariants, d.opts.Integration, &tr.old, "")
	newInv := checkInvariants(d.opts.Invariants, d.opts.Integration, &tr.new, "")
	for i := range ev.Old.Steps {
		n := ev.Old.Steps[i].Step
		ev.Old.Steps[i].Violated, ev.Old.Steps[i].NotEvaluable = oldInv.violated[n], oldInv.notEvaluable[n]
		ev.New.Steps[i].Violated, ev.New.Steps[i].NotEvaluable = newInv.violated[n], newInv.notEvaluable[n]
	}
	for _, r := range newInv.results {
		ie := InvariantEvidence{Name: r.Name, Held: r.Held, FirstStep: r.FirstStep, Message: r.Message,
			NotEvaluable: r.NotEvaluable, NotEvaluableMessage: r.NotEvaluableMessage, TooCostly: r.TooCostly}
		for _, inv := range d.opts.Invariants.Invariants {
			if inv.Name == r.Name {
				ie.Except = inv.Except
			}
		}
		ev.Invariants = append(ev.Invariants, ie)
	}
	if d.contract {
		for _, r := range oldInv.results {
			if !r.Held {
				ev.OldUnmet = append(ev.OldUnmet, InvariantEvidence{Name: r.Name, FirstStep: r.FirstStep, Message: r.Message})
			}
		}
	}
}

// runVariants makes, replays and judges the variants (replayVariants),
// when the old build reproduces the incident (or replays its
// contract) and variants were asked for, and adds them to the evidence.
// A long recording's variants replay the failing step's dependency slice
// when the old build fails it the recorded way; else (a contract, a slice
// too long or not failing) the window.
func (d *diff) runVariants(ctx context.Context, ev *Evidence) error {
	switch {
	case d.contract && notReplayed(*ev) != "":
		ev.Variants.Note = "no variants: the old build does not replay its own recording"
		return nil
	case !d.contract && notReproduced(*ev) != "":
		ev.Variants.Note = "no variants: the old build does not reproduce the incident"
		return nil
	case d.opts.Variants <= 0:
		ev.Variants.Note = "no variants asked for (--variants 0)"
		return nil
	}
	rule := newVariantRule(*ev)
	opts := d.opts
	if _, findings := Derive(*ev); len(findings) > 0 {
		// Red by the recording's own steps already: no variant's failure
		// can change the verdict, so none is asked of the old build again
		// (a planted STRLEN off by one fails most variants: asking each
		// again made the GETRANGE example's grade 10.9 s against 7.5 s).
		opts.Confirm = -1
	}
	cut, fallback := d.win, ""
	if d.win != nil && !d.contract {
		if sl, why := sliceFor(ctx, d.rec, d.failure, d.old, d.ropts, rule.answer, opts); sl != nil {
			cut = sl
		} else {
			fallback = why
		}
	}
	if cut != nil {
		o := opts
		o.stepOf = cut.shift
		keys := d.keys
		if cut.slice != nil {
			keys = cut.keys
		}
		ev.Variants = variantsOn(cut, func(wrec *fixtures.Recording) VariantsEvidence {
			return replayVariants(ctx, wrec, d.old, d.new, d.ropts, rule, keys, nil, nil, o)
		}, d.fx)
		ev.Variants.SliceFallback = fallback
	} else {
		ev.Variants = replayVariants(ctx, d.rec.Recording, d.old, d.new, d.ropts, rule, d.keys, d.writes, d.replaces, opts)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	for _, v := range ev.Variants.List {
		if v.StartError != "" {
			return errors.New(v.StartError)
		}
	}
	return nil
}

// report derives the verdict and the findings from the evidence (Derive)
// and writes them beside it, with what was graded and how long it took.
func (d *diff) report(ev Evidence, rs *replays, variantsTook time.Duration, began time.Time) *Report {
	verdict, findings := Derive(ev)
	if findings == nil {
		findings = []Finding{}
	}
	explained := Explain(ev)
	if explained == nil {
		explained = []Explained{}
	}
	sum := d.rec.SHA256()
	opts := d.opts
	rep := &Report{
		SchemaVersion: SchemaVersion,
		Verdict:       verdict.String(),
		Parts:         verdict,
		Findings:      findings,
		Explained:     explained,
		Fixture:       Fixture{Path: d.fx.Path, SHA256: sum, Protocol: d.fx.Header.Protocol, Steps: d.rec.Len(), Failure: d.fx.Failure},
		Builds:        Builds{Old: opts.Pool.identify(d.old, rs.oldRuns[0]), New: opts.Pool.identify(d.new, rs.newRun)},
		Evidence:      ev,
		Seed:          opts.Seed,
		Options: Settings{Variants: opts.Variants, MinVariants: opts.MinVariants, Seed: opts.Seed, Jobs: opts.Jobs,
			FailFast: opts.FailFast, NoCheckpoints: opts.NoCheckpoints, StepTimeoutMS: opts.StepTimeout.Milliseconds(),
			StartTimeoutMS: opts.StartTimeout.Milliseconds(), Invariants: opts.InvariantsFile, BelowFloor: opts.BelowFloor},
		KavachVersion: kavach.Version,
		Network:       rs.newRun.Network,
	}
	for _, t := range rs.durations[:opts.OldRuns] {
		rep.DurationsMS.Old += t.Milliseconds()
	}
	rep.DurationsMS.New = rs.durations[opts.OldRuns].Milliseconds()
	rep.DurationsMS.Variants = variantsTook.Milliseconds()
	rep.DurationsMS.Total = time.Since(began).Milliseconds()
	return rep
}

// errStop ends a pass over a recording early.
var errStop = errors.New("stop")

// inputsNoise are the fingerprint fields whose values differ between the
// old build's replays (or that some of them lack): what the old build
// does not give alike twice says nothing about the new build.
func inputsNoise(olds []replay.StepResult) []string {
	var noise []string
	for _, a := range olds {
		for k, v := range a.Inputs {
			for _, b := range olds {
				if b.Inputs == nil {
					continue // none to compare (the step is then not judged by fingerprints)
				}
				if w, ok := b.Inputs[k]; (!ok || w != v) && !slices.Contains(noise, k) {
					noise = append(noise, k)
				}
			}
		}
	}
	slices.Sort(noise)
	return noise
}

// BelowFloorError is a diff asked for with options below the fixture's
// floor, and not told to grade below it.
type BelowFloorError struct {
	Below []string // "min_variants 1 < 10"
}

func (e *BelowFloorError) Error() string {
	return "below the fixture's floor: " + strings.Join(e.Below, ", ")
}

// startOrder is the order in which n replays take their places: first
// (the longest), then the others in their order.
func startOrder(n, first int) []int {
	order := make([]int, 0, n)
	if first >= 0 {
		order = append(order, first)
	}
	for i := range n {
		if i != first {
			order = append(order, i)
		}
	}
	return order
}

// runAll replays src on each launch, as many at a time as pool lets,
// each into a spill of its own, and returns the traces (without their
// steps: those are in the spills) in launch order. The first start-up
// error cancels the rest. The caller closes the spills.
func runAll(parent context.Context, launches []kavach.Launch, src replay.Source, opts replay.Options, pool *Pool, progress func(done, total int),
	name func(i int) string) ([]*replay.Trace, []*replay.Spill, []time.Duration, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	traces := make([]*replay.Trace, len(launches))
	spills := make([]*replay.Spill, len(launches))
	durations := make([]time.Duration, len(launches))
	errs := make([]error, len(launches))
	closeAll := func() {
		for _, sp := range spills {
			if sp != nil {
				sp.Close()
			}
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	// The last old replay (before the new build's) is perturbed, and it
	// takes a place first: every one of its clock moves waits for a turn
	// of the build's timer, so it is the longest (eight times a plain
	// replay of 2,000,000 steps), and the others fit beside it
	// (bench/README.md, "scale.sh").
	perturbed := -1
	if len(launches) > 2 {
		perturbed = len(launches) - 2
	}
	for _, i := range startOrder(len(launches), perturbed) {
		l := launches[i]
		if !pool.acquire(ctx) {
			errs[i] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer pool.release()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			start := time.Now()
			o := opts
			o.Perturb = i == perturbed
			if spills[i], errs[i] = replay.NewSpill(""); errs[i] == nil {
				traces[i], errs[i] = replay.Stream(ctx, l, src, o, spills[i])
			}
			durations[i] = time.Since(start)
			if errs[i] != nil {
				cancel()
			}
			mu.Lock()
			done++
			if progress != nil {
				progress(done, len(launches))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && err != context.Canceled {
			closeAll()
			return nil, nil, nil, fmt.Errorf("%s build: %w", name(i), err)
		}
	}
	if err := parent.Err(); err != nil {
		closeAll()
		return nil, nil, nil, fmt.Errorf("interrupted: %w", context.Cause(parent))
	}
	for i, tr := range traces {
		if tr == nil {
			closeAll()
			return nil, nil, nil, fmt.Errorf("%s build: replay did not run: %v", name(i), errs[i])
		}
	}
	return traces, spills, durations, nil
}

// replayName names replay i of a diff's, the old build's olds first,
// for replay.ReadBack's errors.
func replayName(olds int) func(i int) string {
	return func(i int) string {
		if i < olds {
			return fmt.Sprintf("old build, replay %d", i+1)
		}
		return "new build"
	}
}

func which(i, n int) string {
	if i == n-1 {
		return "new"
	}
	return "old"
}

// sameKind reports whether two outcomes have the same kind and class.
func sameKind(a, b kavach.Outcome) bool { return a.Kind == b.Kind && a.Class == b.Class }
