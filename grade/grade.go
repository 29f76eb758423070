package grade

import (
	"context"
	"errors"
	"fmt"
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
	Codec      kavach.Codec      // required
	Classifier kavach.Classifier // required
	Normalizer kavach.Normalizer // nil: compare raw bytes
	Launcher   kavach.Launcher   // required
	// StepTimeout bounds each reply; zero means 5 s.
	StepTimeout time.Duration
	// Prepare rewrites requests before sending (secrets). Nil: none.
	Prepare func(request []byte) []byte
	// Variants is how many variants to generate; MinVariants how many
	// must reproduce the failure for a verdict of fixed. Seed seeds the
	// generator.
	Variants, MinVariants int
	Seed                  uint64
	// Jobs is how many replays run at once; zero means the number of cores.
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
	// StartTimeout is recorded in the report's options; the Launcher
	// applies it.
	StartTimeout time.Duration
}

// Run grades the new build against the fixture (docs/design.md §4) and returns
// the report. An error means Kavach could not grade: a fixture with no
// failure, a build that does not start.
func Run(ctx context.Context, fx *fixtures.Fixture, old, new kavach.Launch, opts Options) (*Report, error) {
	began := time.Now()
	if opts.Codec == nil || opts.Classifier == nil || opts.Launcher == nil {
		return nil, fmt.Errorf("grade: Codec, Classifier and Launcher are required")
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
	f := fx.Failure
	steps := kavach.Steps(fx.Events, opts.Codec)
	contract := f == nil
	if contract {
		if len(steps) == 0 {
			return nil, fmt.Errorf("fixture %s has no steps: a contract needs recorded traffic", fx.Path)
		}
		f = &kavach.Failure{} // a contract: no failure, every step held to the recording
	} else if f.Step < 1 || f.Step > len(steps) {
		return nil, fmt.Errorf("fixture %s: its failure is at step %d, but it has steps 1 to %d", fx.Path, f.Step, len(steps))
	}
	if name := f.Oracle.Invariant; name != "" && (opts.Invariants == nil || !opts.Invariants.Has(name)) {
		return nil, fmt.Errorf("fixture %s: its failure is invariant %q, which no invariants file given declares: pass --invariants FILE", fx.Path, name)
	}
	ropts := replay.Options{
		Codec: opts.Codec, Classifier: opts.Classifier, Normalizer: opts.Normalizer, Launcher: opts.Launcher,
		StepTimeout: opts.StepTimeout, Start: fx.Header.Start, Prepare: opts.Prepare,
	}

	// The old build's replays and the new build's, at most Jobs at a time.
	launches := make([]kavach.Launch, 0, opts.OldRuns+1)
	for i := 0; i < opts.OldRuns; i++ {
		launches = append(launches, old)
	}
	launches = append(launches, new)
	heads, spills, durations, err := runAll(ctx, launches, fx.Events, ropts, opts.Pool, opts.Progress)
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
	// Every step's keys: those after the failure for judging them, those
	// before it for where the variants go (docs/variants.md).
	var keys, writes [][]string
	if !contract && (f.Step < len(steps) || opts.Variants > 0 && f.Step <= len(steps)) {
		keys, writes = learnKeys(ctx, steps, 1, old, opts)
	}

	// The replays are read back step by step beside the recording: the
	// noise (where the old build's replays differ from the recording),
	// and each step's evidence. Only the invariants need whole traces.
	readers := make([]*replay.SpillReader, len(spills))
	for i, sp := range spills {
		if readers[i], err = sp.Steps(); err != nil {
			return nil, err
		}
		defer readers[i].Close()
	}
	noise := replay.Noise{}
	oldSteps := make([]replay.StepResult, opts.OldRuns)
	var oldTrace, newTrace replay.Trace // the first old replay and the new one, kept for the invariants
	for i, s := range steps {
		for j := range oldSteps {
			if oldSteps[j], err = readers[j].Next(s.Request.Data, opts.Normalizer); err != nil {
				return nil, fmt.Errorf("old build, replay %d, step %d: %w", j+1, s.N, err)
			}
		}
		n, err := readers[opts.OldRuns].Next(s.Request.Data, opts.Normalizer)
		if err != nil {
			return nil, fmt.Errorf("new build, step %d: %w", s.N, err)
		}
		if opts.Invariants != nil {
			oldTrace.Steps = append(oldTrace.Steps, oldSteps[0])
			newTrace.Steps = append(newTrace.Steps, n)
		}
		rec := replay.RecordedStep(s, opts.Classifier, opts.Normalizer)
		noise.AddStep(rec, oldSteps...)
		ev.Noise = append(ev.Noise, noise.SeenStep(rec, oldSteps...)...)
		req := opts.Codec.DescribeRequest(s.Request.Data, 200)
		o := oldSteps[0]
		ev.Old.Steps = append(ev.Old.Steps, StepEvidence{Step: s.N, Request: req, Ran: o.Ran, Recorded: rec.Outcome, Outcome: o.Outcome})
		se := StepEvidence{Step: s.N, Request: req, Ran: n.Ran, Recorded: rec.Outcome, Outcome: n.Outcome, Output: n.Output,
			Conn: s.Conn(), AtUS: s.Request.Offset.Microseconds()}
		if !contract && s.N >= f.Step {
			se.KeysUnknown = i >= len(keys) || keys[i] == nil
			if !se.KeysUnknown {
				se.Keys = keys[i]
			}
			if i < len(writes) && writes[i] != nil {
				se.Writes, se.WritesKnown = writes[i], true
			}
		}
		if n.Ran {
			se.Diffs = replay.Compare(rec, n)
			if len(se.Diffs) > 0 && len(rec.Output) > 0 {
				se.RecordedOutput = rec.Output
			}
		}
		ev.New.Steps = append(ev.New.Steps, se)
	}

	oldInv := checkInvariants(opts.Invariants, opts.Codec, &oldTrace, "")
	newInv := checkInvariants(opts.Invariants, opts.Codec, &newTrace, "")
	for i := range ev.Old.Steps {
		n := ev.Old.Steps[i].Step
		ev.Old.Steps[i].Violated, ev.Old.Steps[i].NotEvaluable = oldInv.violated[n], oldInv.notEvaluable[n]
		ev.New.Steps[i].Violated, ev.New.Steps[i].NotEvaluable = newInv.violated[n], newInv.notEvaluable[n]
	}
	for _, r := range newInv.results {
		ie := InvariantEvidence{Name: r.Name, Held: r.Held, FirstStep: r.FirstStep, Message: r.Message,
			NotEvaluable: r.NotEvaluable, NotEvaluableMessage: r.NotEvaluableMessage}
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
		ev.Variants = runVariants(ctx, fx, old, new, ropts, noise, feature, keys, opts)
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
	sum, _ := fixtures.SHA256File(fx.Path)
	rep := &Report{
		SchemaVersion: SchemaVersion,
		Verdict:       parts.String(),
		Parts:         parts,
		Findings:      findings,
		Fixture:       Fixture{Path: fx.Path, SHA256: sum, Protocol: fx.Header.Protocol, Steps: len(steps), Failure: fx.Failure},
		Builds:        Builds{Old: opts.Pool.identify(old, olds[0]), New: opts.Pool.identify(new, nw)},
		Evidence:      ev,
		Seed:          opts.Seed,
		Options: Settings{Variants: opts.Variants, MinVariants: opts.MinVariants, Seed: opts.Seed, Jobs: opts.Jobs,
			FailFast: opts.FailFast, StepTimeoutMS: opts.StepTimeout.Milliseconds(),
			StartTimeoutMS: opts.StartTimeout.Milliseconds(), Invariants: opts.InvariantsFile, BelowFloor: opts.BelowFloor},
		KavachVersion: kavach.Version,
	}
	for _, d := range durations[:opts.OldRuns] {
		rep.DurationsMS.Old += d.Milliseconds()
	}
	rep.DurationsMS.New = durations[opts.OldRuns].Milliseconds()
	rep.DurationsMS.Variants = variantsTook.Milliseconds()
	rep.DurationsMS.Total = time.Since(began).Milliseconds()
	return rep, nil
}

// BelowFloorError is a diff asked for with options below the fixture's
// floor, and not told to grade below it.
type BelowFloorError struct {
	Below []string // "min_variants 1 < 10"
}

func (e *BelowFloorError) Error() string {
	return "below the fixture's floor: " + strings.Join(e.Below, ", ")
}

// runAll replays events on each launch, as many at a time as pool lets,
// each into a spill of its own, and returns the traces (without their
// steps: those are in the spills) in launch order. The first start-up
// error cancels the rest. The caller closes the spills.
func runAll(parent context.Context, launches []kavach.Launch, events []kavach.Event, opts replay.Options, pool *Pool, progress func(done, total int)) ([]*replay.Trace, []*replay.Spill, []time.Duration, error) {
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
				traces[i], errs[i] = replay.Stream(ctx, l, replay.Slice(events), o, spills[i])
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

func which(i, n int) string {
	if i == n-1 {
		return "new"
	}
	return "old"
}
