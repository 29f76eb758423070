package grade

import (
	"bytes"
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
	// OldRuns is how many times the old build is replayed to find noise;
	// zero means 3. The last of them (when there are two or more) runs
	// with its timing perturbed (replay.Options.Perturb), so that an
	// answer that depends on the machine's load shows as noise.
	OldRuns int
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
	// LongSteps: a fixture of more steps than this, or one given without
	// its events (Fixture.Events nil: read from its file as it is
	// replayed), is graded as a long recording (docs/diff.md, "Long
	// recordings"). Zero means DefaultLongSteps.
	LongSteps int
	// Summary is the fixture read once without its events
	// (fixtures.Summarize), when the caller has read it (kavach diff has,
	// to tell a long fixture): Run then does not read the file again to
	// summarize it. Nil: Run summarizes a fixture given without its
	// events.
	Summary *fixtures.Summary
	// FixtureSHA256 is the fixture's SHA-256, when the caller took it as
	// it read the file (grading.Open does): Run then does not read the
	// file again to hash it. "": Run hashes the file.
	FixtureSHA256 string
	// Window is, for a long recording, how many steps before and after
	// the failing step its variants replay. Zero means DefaultWindow.
	Window int
	// stepOf maps a step of the window or slice the variants are made
	// from to the fixture's (variants.Options.StepOf); nil: the variants
	// are made from the fixture.
	stepOf func(int) int
	// failAnswer is the recording's outcome at the failing step: a
	// variant whose invariant oracle does not apply at its varied failing
	// request reproduces by this answer's signature (failsByAnswer).
	failAnswer kavach.Outcome
}

// Run grades the new build against the fixture (docs/design.md §4) and returns
// the report. An error means Kavach could not grade: a fixture with no
// failure, a build that does not start.
func Run(ctx context.Context, fx *fixtures.Fixture, old, new kavach.Launch, opts Options) (*Report, error) {
	began := time.Now()
	if opts.Integration == nil {
		return nil, fmt.Errorf("grade: Integration is required")
	}
	if opts.StepTimeout == 0 {
		opts.StepTimeout = 5 * time.Second
	}
	if below := fx.Header.Floor.Below(opts.Variants, opts.MinVariants, opts.Seed); len(below) > 0 && !opts.BelowFloor {
		return nil, &BelowFloorError{Below: below}
	}
	if opts.Pool == nil {
		opts.Pool = NewPool(opts.Jobs)
	}
	opts.Jobs = opts.Pool.Size()
	if opts.OldRuns <= 0 {
		opts.OldRuns = 3
	}
	if opts.LongSteps <= 0 {
		opts.LongSteps = DefaultLongSteps
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	f := fx.Failure
	rec, long, err := newRecording(fx, opts.Integration, opts.LongSteps, opts.Summary)
	if err != nil {
		return nil, err
	}
	contract := f == nil
	if contract {
		if rec.n == 0 {
			return nil, fmt.Errorf("fixture %s has no steps: a contract needs recorded traffic", fx.Path)
		}
		f = &kavach.Failure{} // a contract: no failure, every step held to the recording
	} else if f.Step < 1 || f.Step > rec.n {
		return nil, fmt.Errorf("fixture %s: its failure is at step %d, but it has steps 1 to %d", fx.Path, f.Step, rec.n)
	}
	if name := f.Oracle.Invariant; name != "" && (opts.Invariants == nil || !opts.Invariants.Has(name)) {
		return nil, fmt.Errorf("fixture %s: its failure is invariant %q, which no invariants file given declares: pass --invariants FILE", fx.Path, name)
	}
	ropts := replay.Options{
		Integration: opts.Integration,
		StepTimeout: opts.StepTimeout, Start: fx.Header.Start, Prepare: opts.Prepare,
	}

	// A long recording's variants replay a window of it, around the
	// failing step (the last steps of a contract).
	var win *window
	if long {
		first, last := max(1, f.Step-opts.Window), min(rec.n, f.Step+opts.Window)
		if contract {
			first, last = max(1, rec.n-2*opts.Window+1), rec.n
		}
		if win, err = cutWindow(rec.src, opts.Integration, first, last); err != nil {
			return nil, err
		}
	}
	// Every step's keys: those after the failure for judging them, those
	// before it for where the variants go (docs/variants.md). A long
	// recording's are the window's: a step after it has its keys unknown.
	var keys, writes [][]string
	keyOf := func(n int) int { return n - 1 }
	if !contract && (f.Step < rec.n || opts.Variants > 0 && f.Step <= rec.n) {
		if win != nil {
			keys, writes = learnKeys(ctx, win.steps, 1, old, opts)
			keyOf = func(n int) int { return n - win.first }
		} else {
			keys, writes = learnKeys(ctx, rec.steps, 1, old, opts)
		}
	}
	// After the failing step, every replay fingerprints the state each
	// step is about to read, where the integration can (docs/diff.md,
	// "After the failure"): the four replays below, not the variants'.
	mainOpts, mainOld, mainNew := ropts, old, new
	inputsRule := ""
	if fp := opts.Integration.Abilities().Fingerprint; fp != nil && !contract && f.Step < rec.n {
		requests := func(yield func([]byte) bool) {
			rec.each(func(s kavach.Step) error {
				if !yield(s.Request.Data) {
					return errStop
				}
				return nil
			})
		}
		o, whyOld := fp.Launch(old, requests)
		n, whyNew := fp.Launch(new, requests)
		if why := cmp.Or(whyOld, whyNew); why != "" {
			inputsRule = RuleInferred + ": " + why
		} else {
			inputsRule = RuleObserved
			mainOld, mainNew = o, n
			// A long recording's steps are fingerprinted within its
			// window after the failure; later ones get the inferred rule.
			until := 0
			if long {
				until = f.Step + opts.Window
			}
			mainOpts.Inputs = &replay.Inputs{From: f.Step, Until: until, Fingerprint: fp, Keys: func(n int) []string {
				if i := keyOf(n); i >= 0 && i < len(keys) {
					return keys[i]
				}
				return nil
			}}
		}
	} else if !contract && f.Step < rec.n {
		inputsRule = RuleInferred + ": the integration cannot fingerprint a build's state"
	}

	// The old build's replays and the new build's, at most Jobs at a time.
	launches := make([]kavach.Launch, 0, opts.OldRuns+1)
	for i := 0; i < opts.OldRuns; i++ {
		launches = append(launches, mainOld)
	}
	launches = append(launches, mainNew)
	// One plan of the recording, shared by the four replays.
	heads, spills, durations, err := runAll(ctx, launches, replay.Shared(rec.src), mainOpts, opts.Pool, opts.Progress)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, sp := range spills {
			sp.Close()
		}
	}()
	olds, nw := heads[:opts.OldRuns], heads[opts.OldRuns]

	ev := Evidence{
		Failure:    *f,
		Contract:   contract,
		Noise:      []replay.NoiseField{},
		Old:        OldEvidence{Runs: opts.OldRuns, Clock: olds[0].Clock, Stopped: olds[0].Stopped},
		New:        NewEvidence{Clock: nw.Clock, Stopped: nw.Stopped, Exit: nw.Exit},
		Variants:   VariantsEvidence{Min: opts.MinVariants, List: []VariantEvidence{}},
		Invariants: []InvariantEvidence{},
	}
	if fl := fx.Header.Floor; fl != nil {
		ev.Floor = &FloorEvidence{Floor: *fl, Variants: opts.Variants, MinVariants: opts.MinVariants, Seed: opts.Seed}
	}
	ev.Inputs = inputsRule
	kin := opts.Integration.Abilities().Kin
	// Steps of a long recording before the window that reproduce the
	// recording exactly on the old and the new build are counted, not
	// listed (Evidence.Omitted). Invariants, decided after, keep them all.
	omit := func(n int) bool {
		return win != nil && opts.Invariants == nil && n < win.first && (contract || n < f.Step)
	}

	// The replays are read back step by step beside the recording: the
	// noise (where the old build's replays differ from the recording),
	// and each step's evidence. Only the invariants need whole traces.
	noise := replay.Noise{}
	var oldTrace, newTrace replay.Trace // the first old replay and the new one, kept for the invariants
	steps := func(fn func(kavach.Step) error) error {
		return rec.each(func(s kavach.Step) error {
			if rec.sum != nil {
				s = cloneStep(s) // streamed: its data is the file's block, valid during this call only
			}
			return fn(s)
		})
	}
	err = replay.ReadBack(steps, spills, opts.Integration, replayName(opts.OldRuns), func(s kavach.Step, got []replay.StepResult) error {
		oldSteps, n := got[:opts.OldRuns], got[opts.OldRuns]
		if opts.Invariants != nil {
			oldTrace.Steps = append(oldTrace.Steps, oldSteps[0])
			newTrace.Steps = append(newTrace.Steps, n)
		}
		want := replay.RecordedStep(s, opts.Integration)
		noise.AddStep(want, oldSteps...)
		seen := noise.SeenStep(want, oldSteps...)
		ev.Noise = append(ev.Noise, seen...)
		o := oldSteps[0]
		if omit(s.N) && len(seen) == 0 && o.Ran && n.Ran && sameKind(o.Outcome, want.Outcome) && sameKind(n.Outcome, want.Outcome) && len(replay.Compare(want, n)) == 0 {
			ev.Omitted++
			return nil
		}
		req := opts.Integration.DescribeRequest(s.Request.Data, 200)
		oe := StepEvidence{Step: s.N, Request: req, Ran: o.Ran, Recorded: want.Outcome, Outcome: o.Outcome, Contained: o.Contained}
		se := StepEvidence{Step: s.N, Request: req, Ran: n.Ran, Recorded: want.Outcome, Outcome: n.Outcome, Output: n.Output,
			Conn: s.Conn(), AtUS: s.Request.Offset.Microseconds(), Contained: n.Contained}
		if !contract && s.N >= f.Step && kin != nil {
			var family []string
			se.Command, family = kin(s.Request.Data)
			if s.N == f.Step {
				ev.FailureFamily = family
			}
		}
		if !contract && s.N > f.Step {
			// After the failure the old build's answer and inputs are
			// kept: an explained step shows them beside the new build's.
			oe.Output, oe.Inputs = o.Output, o.Inputs
			se.Inputs, se.InputsError, se.InputsNoise = n.Inputs, n.InputsError, inputsNoise(oldSteps)
			for j, oj := range oldSteps {
				if oj.Ran && oj.Inputs == nil && se.InputsError == "" {
					// An old replay without a fingerprint cannot say which
					// fields are its noise: the step is not compared by them.
					se.Inputs, se.InputsError = nil, fmt.Sprintf("old build, replay %d: %s", j+1, cmp.Or(oj.InputsError, "no fingerprint"))
				}
			}
		}
		ev.Old.Steps = append(ev.Old.Steps, oe)
		if i := keyOf(s.N); !contract && s.N >= f.Step {
			se.KeysUnknown = i < 0 || i >= len(keys) || keys[i] == nil
			if !se.KeysUnknown {
				se.Keys = keys[i]
			}
			if i >= 0 && i < len(writes) && writes[i] != nil {
				se.Writes, se.WritesKnown = writes[i], true
			}
		}
		if n.Ran && n.Contained == "" {
			se.Diffs = replay.Compare(want, n)
			if len(se.Diffs) > 0 && len(want.Output) > 0 {
				se.RecordedOutput = want.Output
			}
		}
		ev.New.Steps = append(ev.New.Steps, se)
		return nil
	})
	if err != nil {
		return nil, err
	}

	oldInv := checkInvariants(opts.Invariants, opts.Integration, &oldTrace, "")
	newInv := checkInvariants(opts.Invariants, opts.Integration, &newTrace, "")
	for i := range ev.Old.Steps {
		n := ev.Old.Steps[i].Step
		ev.Old.Steps[i].Violated, ev.Old.Steps[i].NotEvaluable = oldInv.violated[n], oldInv.notEvaluable[n]
		ev.New.Steps[i].Violated, ev.New.Steps[i].NotEvaluable = newInv.violated[n], newInv.notEvaluable[n]
	}
	for _, r := range newInv.results {
		ie := InvariantEvidence{Name: r.Name, Held: r.Held, FirstStep: r.FirstStep, Message: r.Message,
			NotEvaluable: r.NotEvaluable, NotEvaluableMessage: r.NotEvaluableMessage, TooCostly: r.TooCostly}
		for _, inv := range opts.Invariants.Invariants {
			if inv.Name == r.Name {
				ie.Except = inv.Except
			}
		}
		ev.Invariants = append(ev.Invariants, ie)
	}
	if contract {
		for _, r := range oldInv.results {
			if !r.Held {
				ev.OldUnmet = append(ev.OldUnmet, InvariantEvidence{Name: r.Name, FirstStep: r.FirstStep, Message: r.Message})
			}
		}
	}
	var variantsTook time.Duration
	switch {
	case contract && notReplayed(ev) != "":
		ev.Variants.Note = "no variants: the old build does not replay its own recording"
	case !contract && notReproduced(ev) != "":
		ev.Variants.Note = "no variants: the old build does not reproduce the incident"
	case opts.Variants <= 0:
		ev.Variants.Note = "no variants asked for (--variants 0)"
	default:
		vstart := time.Now()
		// A contract's steps where the old build does not meet an
		// invariant (a feature's) are the invariant's to judge, on the
		// variants as on the recording.
		var feature map[int]bool
		if contract {
			feature = map[int]bool{}
			for n := range oldInv.violated {
				feature[n] = true
			}
		}
		for _, s := range ev.Old.Steps {
			if s.Step == f.Step {
				opts.failAnswer = s.Recorded
			}
		}
		// A long recording's variants replay the failing step's
		// dependency slice when the old build fails it the recorded way;
		// else (a contract, a slice too long or not failing) the window.
		cut, fallback := win, ""
		if win != nil && !contract {
			if sl, why := sliceFor(ctx, rec, *f, old, ropts, opts); sl != nil {
				cut = sl
			} else {
				fallback = why
			}
		}
		if cut != nil {
			o := opts
			o.stepOf = cut.shift
			keys := keys
			if cut.slice != nil {
				keys = cut.keys
			}
			ev.Variants = variantsOn(cut, func(wfx *fixtures.Fixture, noise replay.Noise, feature map[int]bool, keys [][]string) VariantsEvidence {
				return runVariants(ctx, wfx, old, new, ropts, noise, feature, keys, o)
			}, fx, noise, feature, keys)
			ev.Variants.SliceFallback = fallback
		} else {
			ev.Variants = runVariants(ctx, fx, old, new, ropts, noise, feature, keys, opts)
		}
		variantsTook = time.Since(vstart)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted: %w", context.Cause(ctx))
		}
		for _, v := range ev.Variants.List {
			if v.StartError != "" {
				return nil, errors.New(v.StartError)
			}
		}
	}
	parts, findings := Derive(ev)
	if findings == nil {
		findings = []Finding{}
	}
	explained := Explain(ev)
	if explained == nil {
		explained = []Explained{}
	}
	sum := opts.FixtureSHA256
	if sum == "" {
		sum, _ = fixtures.SHA256File(fx.Path)
	}
	rep := &Report{
		SchemaVersion: SchemaVersion,
		Verdict:       parts.String(),
		Parts:         parts,
		Findings:      findings,
		Explained:     explained,
		Fixture:       Fixture{Path: fx.Path, SHA256: sum, Protocol: fx.Header.Protocol, Steps: rec.n, Failure: fx.Failure},
		Builds:        Builds{Old: opts.Pool.identify(old, olds[0]), New: opts.Pool.identify(new, nw)},
		Evidence:      ev,
		Seed:          opts.Seed,
		Options: Settings{Variants: opts.Variants, MinVariants: opts.MinVariants, Seed: opts.Seed, Jobs: opts.Jobs,
			FailFast: opts.FailFast, StepTimeoutMS: opts.StepTimeout.Milliseconds(),
			StartTimeoutMS: opts.StartTimeout.Milliseconds(), Invariants: opts.InvariantsFile, BelowFloor: opts.BelowFloor},
		KavachVersion: kavach.Version,
		Network:       nw.Network,
	}
	for _, d := range durations[:opts.OldRuns] {
		rep.DurationsMS.Old += d.Milliseconds()
	}
	rep.DurationsMS.New = durations[opts.OldRuns].Milliseconds()
	rep.DurationsMS.Variants = variantsTook.Milliseconds()
	rep.DurationsMS.Total = time.Since(began).Milliseconds()
	return rep, nil
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

// runAll replays src on each launch, as many at a time as pool lets,
// each into a spill of its own, and returns the traces (without their
// steps: those are in the spills) in launch order. The first start-up
// error cancels the rest. The caller closes the spills.
func runAll(parent context.Context, launches []kavach.Launch, src replay.Source, opts replay.Options, pool *Pool, progress func(done, total int)) ([]*replay.Trace, []*replay.Spill, []time.Duration, error) {
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
	for i, l := range launches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !pool.acquire(ctx) {
				errs[i] = ctx.Err()
				return
			}
			defer pool.release()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			start := time.Now()
			o := opts
			// The last old replay (before the new build's), perturbed.
			o.Perturb = len(launches) > 2 && i == len(launches)-2
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
			return nil, nil, nil, fmt.Errorf("%s build: %w", which(i, len(launches)), err)
		}
	}
	if err := parent.Err(); err != nil {
		closeAll()
		return nil, nil, nil, fmt.Errorf("interrupted: %w", context.Cause(parent))
	}
	for i, tr := range traces {
		if tr == nil {
			closeAll()
			return nil, nil, nil, fmt.Errorf("%s build: replay did not run: %v", which(i, len(launches)), errs[i])
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

// cloneStep is s with data of its own.
func cloneStep(s kavach.Step) kavach.Step {
	s.Request.Data = bytes.Clone(s.Request.Data)
	rs := make([]kavach.Event, len(s.Responses))
	for i, r := range s.Responses {
		r.Data = bytes.Clone(r.Data)
		rs[i] = r
	}
	s.Responses = rs
	return s
}
