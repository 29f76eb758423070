package grade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/replay"
	"github.com/kavach-dev/kavach/variants"
)

// learnSchema asks the old build the field types of the requests in the
// fixture (Learn). No schema (nil) when it cannot be asked, and the note
// says why: the variants then guess field types.
func learnSchema(ctx context.Context, rec *fixtures.Recording, old kavach.Launch, opts Options) (kavach.Schema, string) {
	l, err := Learn(ctx, opts.Integration, old, rec.Steps(), Learning{Schema: true, Pool: opts.Pool})
	if err != nil {
		return nil, "field types guessed: " + err.Error()
	}
	return l.Schema, "field types learned from the old build"
}

// makeVariants generates the variants of fx (docs/variants.md), with
// what their evidence says of how they were made and how many of each
// kind could be made (applicable); ok is false when the integration
// cannot vary requests.
func makeVariants(ctx context.Context, rec *fixtures.Recording, old kavach.Launch, keys, writes, replaces [][]string, opts Options) (vs []variants.Variant, ve VariantsEvidence, applicable map[string]int, ok bool) {
	fx := rec.Fixture()
	ve = VariantsEvidence{Min: opts.MinVariants, List: []VariantEvidence{}}
	variator := opts.Integration.Abilities().Variation
	if variator == nil {
		ve.Note = "the integration cannot vary requests: no variants"
		return nil, ve, nil, false
	}
	schema, note := learnSchema(ctx, rec, old, opts)
	vopts := variants.Options{Codec: opts.Integration, Variator: variator, Schema: schema, Budget: opts.Variants, Cap: variants.CapFor(opts.Variants), Seed: opts.Seed, Start: fx.Header.Start, Keys: keys, Writes: writes, Replaces: replaces, Deferred: true, StepOf: opts.stepOf,
		Upgrade: CanHandOff(opts.Integration, fx)}
	// A contract (no failure) has regression variants of every step only.
	if f := fx.Failure; f == nil {
		vs, applicable = variants.RegressionCounted(fx.Events, vopts)
	} else {
		vopts.Exclude = f.ExcludeVariants
		vs, applicable = variants.Counted(fx.Events, f.Step, vopts)
		ve.LeftWhole = variants.LeftWhole(fx.Events, f.Step, vopts)
		ve.SkippedSiblings = variants.SkippedSiblings(fx.Events, f.Step, vopts)
		ve.Excluded = f.ExcludeVariants
	}
	ve.Note = note
	return vs, ve, applicable, true
}

// replayVariants generates the variants, replays each on the old build,
// keeps those that reproduce the failure (or, for regression variants,
// that the old build handles), and replays the kept ones on the new build
// (docs/design.md §4, steps 4 and 5), Jobs at a time, each variant
// holding a place in the pool; the variant rule (rule, JudgeVariant)
// judges each. keys are each step's keys, writes the keys each writes
// and replaces those it replaces whole, as the old build says
// (learnKeys), for where the variants go; nil when unknown (writes: the
// codec's list decides; replaces: none).
func replayVariants(ctx context.Context, rec *fixtures.Recording, old, new kavach.Launch, ropts replay.Options, rule variantRule, keys, writes, replaces [][]string, opts Options) VariantsEvidence {
	fx := rec.Fixture()
	vs, ve, applicable, ok := makeVariants(ctx, rec, old, keys, writes, replaces, opts)
	if !ok {
		return ve
	}
	var f kavach.Failure
	if fx.Failure != nil {
		f = *fx.Failure
	}
	cps := newCheckpoints(fx.Events, vs, keys, writes, ropts, opts)
	defer cps.close()
	results := make([]VariantEvidence, len(vs))
	var (
		next   atomic.Int64
		failed atomic.Bool
		done   atomic.Int64
		wg     sync.WaitGroup
	)
	for w := 0; w < opts.Jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(vs) || ctx.Err() != nil {
					return
				}
				if opts.FailFast && failed.Load() {
					results[i] = VariantEvidence{K: vs[i].K, Kind: vs[i].Kind, Place: vs[i].Place, Description: vs[i].Description, Regression: vs[i].Regression, Skipped: true}
					continue
				}
				if !opts.Pool.acquire(ctx) {
					return
				}
				// Made here and dropped after: one copy of the recording
				// per worker, not one per variant.
				v := vs[i]
				v.Events, v.Origin = v.Build()
				results[i] = runVariant(ctx, v, f, old, new, ropts, rule, keys, opts, cps.runner(i))
				opts.Pool.release()
				if results[i].Kept && results[i].FailedStep > 0 {
					failed.Store(true)
				}
				if opts.Progress != nil {
					opts.Progress(int(done.Add(1)), len(vs))
				}
			}
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.K != 0 { // else not run: interrupted
			ve.List = append(ve.List, r)
		}
	}
	countVariants(&ve)
	ve.Checkpoints = cps.evidence()
	ve.ByKind = WithApplicable(CountKinds(ve.List), applicable)
	return ve
}

// runVariant replays one variant on the old build and, if the variant
// rule keeps it, on the new one, and returns the variant with its steps
// on both builds, judged (JudgeVariant). f is the failure of the
// recording the variant was made from (zero for a contract); keys its
// steps' keys, for the fingerprints of observeInputs. run replays it on
// a build, from a checkpoint where it has one (checkpoints.runner; nil:
// every step).
func runVariant(ctx context.Context, v variants.Variant, f kavach.Failure, old, new kavach.Launch, ropts replay.Options, rule variantRule, keys [][]string, opts Options, run func(role string) replayFunc) VariantEvidence {
	r := VariantEvidence{K: v.K, Kind: v.Kind, Place: v.Place, Description: v.Description, Regression: v.Regression}
	// A transplant reproduces at the request its trigger went into.
	at := 0
	if !v.Regression {
		at = cmp.Or(v.FailsAt, f.Step)
		r.FailsAt = fixtureStep(v, at, opts.stepOf, false)
	}
	ropts.Shift = v.ShiftAt
	if v.HandOff > 0 {
		hv, hopts, done, err := handOff(ctx, v, old, ropts)
		if err != nil {
			// Not run, so not kept: the old build could not be brought
			// to the hand-off (the evidence says why).
			r.Description += "; not run: " + err.Error()
			return r
		}
		defer done()
		v, ropts = hv, hopts
		run = nil // it starts from the old build's state already
		if opts.stepOf == nil {
			// Its steps are counted from the hand-off: named by the
			// fixture's steps they came from.
			opts.stepOf = func(n int) int { return n }
		}
	}
	if run == nil {
		run = func(string) replayFunc { return runRetry }
	}
	ot, remembered, err := opts.Memo.replay(ctx, opts.memoScope, old, v.Events, ropts, run("old"))
	if err != nil && v.HandOff > 0 && errors.Is(err, replay.ErrNotRestored) {
		// The old build does not restore its own state: the variant
		// cannot reproduce anything (not run, not kept).
		r.Description += "; not run: the old build, started from its own saved state: " + err.Error()
		return r
	}
	if err != nil {
		r.StartError = fmt.Sprintf("variant %d: the old build did not start, twice: %v", v.K, err)
		return r
	}
	r.Remembered = remembered
	// A writer's value the old build refused stored nothing: the next
	// value of its part is tried, observed on the old build too.
	for _, a := range v.Alternates {
		if !refusedAtWriter(v, ot) {
			break
		}
		a.Events, a.Origin = a.Build() // numbered v.K by the generator
		at, remembered, err := opts.Memo.replay(ctx, opts.memoScope, old, a.Events, ropts, run("old"))
		if err != nil {
			r.StartError = fmt.Sprintf("variant %d: the old build did not start, twice: %v", v.K, err)
			return r
		}
		v, ot = a, at
		r.Remembered = r.Remembered && remembered
		r.Refused++
		r.Description = v.Description
	}
	oldInv := checkInvariants(opts.Invariants, opts.Integration, ot, v.Kind)
	r.Replayed = len(ot.Steps)
	r.Steps = variantSteps(v, at, ot, nil, oldInv, checked{}, opts.stepOf, nil, nil)
	if r = rule.judge(r); !r.Kept {
		return r
	}
	nt, err := run("new")(ctx, new, v.Events, ropts)
	if err != nil {
		r.StartError = fmt.Sprintf("variant %d: the new build did not start, twice: %v", v.K, err)
		return r
	}
	newInv := checkInvariants(opts.Invariants, opts.Integration, nt, v.Kind)
	r.Steps = variantSteps(v, at, ot, nt, oldInv, newInv, opts.stepOf, nil, nil)
	if r = rule.judge(r); r.FailedStep == 0 || len(r.Diffs) == 0 {
		return r
	}
	// Failed by another answer before the old build's failure: was it
	// the same state that answered otherwise? Observed, not inferred.
	differ := observeInputs(ctx, v, old, new, ropts, keys, opts)
	if len(differ) > 0 {
		r.Steps = variantSteps(v, at, ot, nt, oldInv, newInv, opts.stepOf, differ, nil)
		r = rule.judge(r)
	}
	// Failed by another answer still: does the old build, asked again,
	// give that answer too? Observed, as the fixture's own noise is
	// (docs/diff.md, "Asked again, not inferred").
	noisy := map[int][]string{}
	for round := 0; r.FailedStep != 0 && len(r.Diffs) > 0 && opts.Confirm > 0 && round < confirmRounds; round++ {
		if err := askAgain(ctx, old, v.Events, ropts, ot, opts.Confirm, noisy); err != nil {
			r.StartError = fmt.Sprintf("variant %d: the old build did not start, twice: %v", v.K, err)
			return r
		}
		r.Confirming += opts.Confirm
		failed, diffs := r.FailedStep, len(r.Diffs)
		r.Steps = variantSteps(v, at, ot, nt, oldInv, newInv, opts.stepOf, differ, noisy)
		if r = rule.judge(r); r.FailedStep == failed && len(r.Diffs) == diffs {
			break // the old build gave none of them: the failure stands
		}
	}
	return r
}

// askAgain replays a variant's events on the old build n more times and
// adds to noisy, by the variant's step, the paths where a replay answered
// otherwise than ot, the old build's first replay of them.
func askAgain(ctx context.Context, old kavach.Launch, events []kavach.Event, ropts replay.Options, ot *replay.Trace, n int, noisy map[int][]string) error {
	for range n {
		tr, err := runRetry(ctx, old, events, ropts)
		if err != nil {
			return err
		}
		for i, o := range ot.Steps {
			if i >= len(tr.Steps) || !o.Ran || !tr.Steps[i].Ran {
				continue
			}
			for _, d := range replay.Compare(o, tr.Steps[i]) {
				if !slices.Contains(noisy[o.N], d.Path) {
					noisy[o.N] = append(noisy[o.N], d.Path)
				}
			}
		}
	}
	return nil
}

// refusedAtWriter reports whether the old build's replay ot of a variant
// of a writer's value answered the varied writer with an error.
func refusedAtWriter(v variants.Variant, ot *replay.Trace) bool {
	w := v.Writer()
	if w == 0 {
		return false
	}
	for i, o := range v.Origin {
		if o == w && i < len(ot.Steps) {
			s := ot.Steps[i]
			return s.Ran && s.Outcome.Kind == kavach.Error
		}
	}
	return false
}

// observeInputs replays variant v once more on each build, fingerprinting
// the state every step is about to read (the integration's probe, keys
// the step's origin's), and returns, by the variant's own step, the
// fields of the state's content that differ between the builds
// (Fingerprinting.Content: a key's type and value; its access clock and
// encoding, which differ between two replays of one build, are left
// out). Nil when the integration cannot
// fingerprint, a build cannot be (its recording sends DEBUG), or a replay
// did not start: the step is then judged by its answer alone.
func observeInputs(ctx context.Context, v variants.Variant, old, new kavach.Launch, ropts replay.Options, keys [][]string, opts Options) map[int][]InputField {
	fp := opts.Integration.Abilities().Fingerprint
	if fp == nil {
		return nil
	}
	requests := func(yield func([]byte) bool) {
		for _, e := range v.Events {
			if e.Dir == kavach.Request && !yield(e.Data) {
				return
			}
		}
	}
	ol, whyOld := fp.Launch(old, requests)
	nl, whyNew := fp.Launch(new, requests)
	if whyOld != "" || whyNew != "" {
		return nil
	}
	ropts.Inputs = &replay.Inputs{Fingerprint: fp, Keys: func(n int) []string {
		if o := originOf(v, n); o > 0 && o-1 < len(keys) {
			return keys[o-1]
		}
		return nil
	}}
	ot, err := runRetry(ctx, ol, v.Events, ropts)
	if err != nil {
		return nil
	}
	nt, err := runRetry(ctx, nl, v.Events, ropts)
	if err != nil {
		return nil
	}
	out := map[int][]InputField{}
	for i, o := range ot.Steps {
		if i >= len(nt.Steps) || o.Inputs == nil || nt.Steps[i].Inputs == nil {
			continue
		}
		n := nt.Steps[i]
		for _, k := range slices.Sorted(maps.Keys(o.Inputs)) {
			if fp.Content != nil && !fp.Content(k) {
				continue
			}
			if ov, nv := o.Inputs[k], cmp.Or(n.Inputs[k], "(none)"); ov != nv {
				out[o.N] = append(out[o.N], InputField{Field: k, Old: ov, New: nv})
			}
		}
	}
	return out
}

// variantSteps are a variant's replays on the old build (ot) and the new
// (nt; nil when it did not replay the variant) as the variant's evidence
// (VariantEvidence.Steps), leaving out the steps both builds ran and
// answered ok, alike, with no invariant broken, except those whose origin
// is at (the varied failing request; 0 for a regression variant). A step
// is named, and its origin given, by the fixture's steps (stepOf, for a
// variant of a window or slice of a long recording).
func variantSteps(v variants.Variant, at int, ot, nt *replay.Trace, oldInv, newInv checked, stepOf func(int) int, differ map[int][]InputField, noisy map[int][]string) []VariantStep {
	reply := func(s replay.StepResult, inv checked, failing bool) VariantReply {
		r := VariantReply{Ran: s.Ran, Outcome: s.Outcome, Violated: inv.violated[s.N], Message: inv.message(s.N)}
		if failing {
			r.Applied = inv.applied[s.N]
		}
		return r
	}
	var steps []VariantStep
	for i, o := range ot.Steps {
		origin := originOf(v, o.N)
		failing := at != 0 && origin == at
		vs := VariantStep{Step: fixtureStep(v, o.N, stepOf, true), Origin: fixtureStep(v, origin, stepOf, false), Old: reply(o, oldInv, failing), InputsDiffer: differ[o.N],
			OldNoise: noisy[o.N]}
		quiet := o.Ran && o.Outcome.Kind == kavach.OK && len(vs.Old.Violated) == 0
		if nt != nil && i < len(nt.Steps) {
			n := reply(nt.Steps[i], newInv, failing)
			vs.New = &n
			if o.Ran && n.Ran {
				vs.Diffs = replay.Compare(o, nt.Steps[i])
				for j := range vs.Diffs {
					vs.Diffs[j].Step = vs.Step
				}
			}
			quiet = quiet && n.Ran && n.Outcome.Kind == kavach.OK && len(n.Violated) == 0 && len(vs.Diffs) == 0
		}
		if !quiet || failing {
			steps = append(steps, vs)
		}
	}
	return steps
}

// runRetry replays once more when the build does not start: a start that
// fails once (a port taken between finding and binding it, a machine
// short of processes) is no evidence about the build; one that fails
// twice makes the diff fail (exit 2), never a verdict.
func runRetry(ctx context.Context, l kavach.Launch, events []kavach.Event, opts replay.Options) (*replay.Trace, error) {
	tr, err := replay.Run(ctx, l, events, opts)
	if err != nil && ctx.Err() == nil {
		tr, err = replay.Run(ctx, l, events, opts)
	}
	return tr, err
}

// describeOutcome is an outcome for a person: its signature, and its detail.
func describeOutcome(o kavach.Outcome) string {
	s := kavach.ErrorSignature(o)
	if o.Detail != "" && o.Kind != kavach.Error {
		s += ": " + o.Detail
	}
	return s
}

func originOf(v variants.Variant, step int) int {
	if step-1 < len(v.Origin) {
		return v.Origin[step-1]
	}
	return 0
}

// fixtureStep is the fixture's step that a variant's step n (a step of
// the window or slice it was made from, when !own) stands for, when
// the variant was made from a window or slice whose steps stepOf maps to
// the fixture's; a variant's own step is named by its origin, if it has
// one. Without stepOf, n stays n; 0 stays 0 (no step).
func fixtureStep(v variants.Variant, n int, stepOf func(int) int, own bool) int {
	if n == 0 || stepOf == nil {
		return n
	}
	if own {
		if o := originOf(v, n); o != 0 {
			return stepOf(o)
		}
	}
	return stepOf(n)
}
