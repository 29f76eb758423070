package grade

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/replay"
	"github.com/kavach-dev/kavach/variants"
)

// learnSchema starts the old build once, without a faked clock, and asks
// it about the requests in the fixture. No schema (nil) when the
// integration cannot learn one; the variants then guess field types.
func learnSchema(ctx context.Context, fx *fixtures.Fixture, old kavach.Launch, opts Options) (kavach.Schema, string) {
	ab := opts.Integration.Abilities()
	learn, v := ab.Learn, ab.Variation
	if learn == nil || v == nil {
		return nil, "field types guessed: the integration cannot ask the build"
	}
	kinds := RequestKinds(kavach.Steps(fx.Events, opts.Integration), v)
	if !opts.Pool.acquire(ctx) {
		return nil, "field types guessed: " + ctx.Err().Error()
	}
	defer opts.Pool.release()
	p, err := opts.Integration.Start(ctx, old)
	if err != nil {
		return nil, "field types guessed: " + err.Error()
	}
	defer p.Stop()
	schema, err := learn(ctx, p.Addr(), kinds)
	if err != nil {
		return nil, "field types guessed: " + err.Error()
	}
	return schema, "field types learned from the old build"
}

// runVariants generates the variants, replays each on the old build,
// keeps those that reproduce the failure (or, for regression variants,
// that the old build handles), and replays the kept ones on the new build
// (docs/design.md §4, steps 4 and 5), Jobs at a time, each variant
// holding a place in the pool.
// feature are the fixture's steps whose answers are not compared (a
// contract's steps where the old build does not meet an invariant); nil
// for an incident. keys are each step's keys (learnKeys), for where the
// variants go; nil when unknown.
func runVariants(ctx context.Context, fx *fixtures.Fixture, old, new kavach.Launch, ropts replay.Options, noise replay.Noise, feature map[int]bool, keys [][]string, opts Options) VariantsEvidence {
	ve := VariantsEvidence{Min: opts.MinVariants, List: []VariantEvidence{}}
	variator := opts.Integration.Abilities().Variation
	if variator == nil {
		ve.Note = "the integration cannot vary requests: no variants"
		return ve
	}
	schema, note := learnSchema(ctx, fx, old, opts)
	vopts := variants.Options{Codec: opts.Integration, Variator: variator, Schema: schema, Budget: opts.Variants, Seed: opts.Seed, Start: fx.Header.Start, Keys: keys, Deferred: true, StepOf: opts.stepOf}
	// A contract (no failure) has regression variants of every step only.
	var f kavach.Failure
	var vs []variants.Variant
	if fx.Failure == nil {
		vs = variants.Regression(fx.Events, vopts)
	} else {
		f = *fx.Failure
		vopts.Exclude = f.ExcludeVariants
		vs = variants.Generate(fx.Events, f.Step, vopts)
		ve.LeftWhole = variants.LeftWhole(fx.Events, f.Step, vopts)
		ve.SkippedSiblings = variants.SkippedSiblings(fx.Events, f.Step, vopts)
	}
	ve.Note = note
	ve.Excluded = f.ExcludeVariants
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
				results[i] = runVariant(ctx, v, f, old, new, ropts, noise, feature, opts)
				if opts.stepOf != nil {
					// Made from a window or slice of a long recording: a
					// step is named by the fixture's step it came from.
					r := &results[i]
					r.OldStep, r.FailedStep = fixtureStep(v, r.OldStep, opts.stepOf), fixtureStep(v, r.FailedStep, opts.stepOf)
					for j := range r.Diffs {
						r.Diffs[j].Step = fixtureStep(v, r.Diffs[j].Step, opts.stepOf)
					}
				}
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
		if r.K == 0 {
			continue // not run: interrupted
		}
		if r.Regression {
			ve.Regression++
			if r.Kept {
				ve.Handled++
			}
		} else {
			ve.Generated++
			if r.Kept {
				ve.Reproducing++
			}
		}
		if r.Kept && r.FailedStep == 0 && !r.Skipped {
			ve.Passing++
		}
		ve.List = append(ve.List, r)
	}
	ve.ByKind = CountKinds(ve.List)
	return ve
}

// runVariant replays one variant on the old build and, if it is kept, on
// the new one, and says where the new build failed it.
//
// A variant of the incident is kept when the old build fails at the
// varied failing request (the step whose origin is the failing step) with
// the recorded signature, or the failure's invariant violated there; a
// failure elsewhere does not count. A regression variant is kept when the
// old build fails nowhere. The new build fails a kept variant at a step
// only when it shows a failure there: a crash, a hang, an invariant
// violated, the recorded signature (unless the old build gave the very
// same answer there and it is not the failing request: an unrelated error
// both builds give is none of the new build's doing), or, before the old
// build's first failure (the recorded way, a crash or a hang) and where
// the old build did not fail, an output
// different from the old build's, noise of the step's origin excluded,
// and steps whose origin is in feature not compared.
func runVariant(ctx context.Context, v variants.Variant, f kavach.Failure, old, new kavach.Launch, ropts replay.Options, noise replay.Noise, feature map[int]bool, opts Options) VariantEvidence {
	r := VariantEvidence{K: v.K, Kind: v.Kind, Place: v.Place, Description: v.Description, Regression: v.Regression}
	ropts.Shift = v.ShiftAt
	ot, err := runRetry(ctx, old, v.Events, ropts)
	if err != nil {
		r.StartError = fmt.Sprintf("variant %d: the old build did not start, twice: %v", v.K, err)
		return r
	}
	oldInv := checkInvariants(opts.Invariants, opts.Integration, ot, v.Kind)
	broken := func(s replay.StepResult) bool { return s.Outcome.Kind == kavach.Crash || s.Outcome.Kind == kavach.Hang }
	limit := 0 // steps before limit must give the old build's outputs
	if v.Regression {
		r.Kept = true
		for _, s := range ot.Steps {
			if s.Ran && (recurs(f, s.Outcome, oldInv.violated[s.N]) || broken(s)) {
				r.Kept, r.OldStep, r.OldOutcome = false, s.N, s.Outcome
				break
			}
		}
		limit = len(ot.Steps) + 1
	} else {
		// A transplant reproduces at the request its trigger went into.
		at := f.Step
		if v.FailsAt > 0 {
			at = v.FailsAt
		}
		for _, s := range ot.Steps {
			if !s.Ran || originOf(v, s.N) != at {
				continue
			}
			if recurs(f, s.Outcome, oldInv.violated[s.N]) {
				r.Kept, r.OldStep, r.OldOutcome = true, s.N, s.Outcome
				if m := oldInv.message(s.N); m != "" {
					r.OldOutcome.Detail = m
				}
			} else if failsByAnswer(f, opts.failAnswer, s.Outcome, oldInv.applied[s.N]) {
				r.Kept, r.OldStep, r.OldOutcome = true, s.N, s.Outcome
				r.OldOutcome.Detail = fmt.Sprintf("the recorded failing answer (%s), where invariant %s does not apply: %s",
					kavach.ErrorSignature(opts.failAnswer), f.Oracle.Invariant, describeOutcome(s.Outcome))
			} else {
				r.OldStep, r.OldOutcome = s.N, s.Outcome
				r.OldOutcome.Detail = "at the varied failing request: " + describeOutcome(s.Outcome)
			}
			break
		}
		limit = r.OldStep
		// Outputs are compared only before the old build first failed the
		// recorded way: a variant can make it fail earlier than at the
		// varied failing request (the step before it delivered twice pops
		// what the failing one would have), and what follows that failure
		// is the fix's to change.
		for _, s := range ot.Steps {
			if s.Ran && s.N < limit && (recurs(f, s.Outcome, oldInv.violated[s.N]) || broken(s)) {
				limit = s.N
				break
			}
		}
	}
	if !r.Kept {
		if r.OldOutcome.Kind == "" {
			r.OldOutcome = kavach.Outcome{Kind: kavach.OK, Detail: "no step failed the recorded way"}
		}
		return r
	}
	nt, err := runRetry(ctx, new, v.Events, ropts)
	if err != nil {
		r.StartError = fmt.Sprintf("variant %d: the new build did not start, twice: %v", v.K, err)
		return r
	}
	newInv := checkInvariants(opts.Invariants, opts.Integration, nt, v.Kind)
	for i, s := range nt.Steps {
		if !s.Ran {
			break
		}
		var o *replay.StepResult
		if i < len(ot.Steps) && ot.Steps[i].Ran {
			o = &ot.Steps[i]
		}
		// The same answer as the old build's, at a step that is not the
		// old build's failure: whatever it is, the new build did not cause it.
		same := o != nil && s.N != r.OldStep && len(replay.Compare(*o, s)) == 0
		signature := recurs(f, s.Outcome, newInv.violated[s.N]) && !same ||
			s.N == r.OldStep && failsByAnswer(f, opts.failAnswer, s.Outcome, newInv.applied[s.N])
		// An invariant the old build breaks at the same step with the same
		// answer does not speak for this variant (SET ... NX that did not
		// set, read back by a "GET returns what SET set" rule): the new
		// build broke nothing there.
		var violated []string
		for _, name := range newInv.violated[s.N] {
			if !(same && o != nil && slices.Contains(oldInv.violated[s.N], name)) {
				violated = append(violated, name)
			}
		}
		if broken(s) || signature || len(violated) > 0 {
			r.FailedStep, r.NewOutcome = s.N, s.Outcome
			if m := newInv.message(s.N); m != "" && !broken(s) {
				r.NewOutcome.Detail = m
			}
			return r
		}
		// Outputs are compared before the old build's failing step, where
		// the old build did not fail: an answer that was itself a failure
		// (an invariant it broke, the signature) may rightly change.
		if s.N >= limit || o == nil || broken(*o) || recurs(f, o.Outcome, oldInv.violated[s.N]) || len(oldInv.violated[s.N]) > 0 || feature[originOf(v, s.N)] {
			continue
		}
		// Noise of the step's origin is skipped before diffing.
		var skip func(string) bool
		if origin := originOf(v, s.N); origin != 0 {
			skip = func(path string) bool { return noise.Covers(origin, path) }
		}
		counted := replay.CompareSkipping(*o, s, skip)
		if len(counted) > 0 {
			r.FailedStep, r.NewOutcome, r.Diffs = s.N, s.Outcome, counted
			// A variant of the incident keeps the old outcome that kept
			// it (at OldStep); a regression variant, kept by failing
			// nowhere, has the old build's answer here.
			if v.Regression {
				r.OldOutcome = o.Outcome
			}
			return r
		}
	}
	r.NewOutcome = kavach.Outcome{Kind: kavach.OK, Detail: fmt.Sprintf("no failure in %d steps", len(nt.Steps))}
	return r
}

// failsByAnswer reports whether out, a variant's answer at its varied
// failing request, is the recorded failure by the answer itself: the
// failure's oracle is an invariant that does not apply there (applied
// are the invariants that did), and out carries the signature of the
// recorded failing answer (answer), which was an error, a crash or a
// hang — not a plain answer, which says nothing alone (docs/variants.md,
// "Reproducing").
func failsByAnswer(f kavach.Failure, answer, out kavach.Outcome, applied []string) bool {
	if f.Oracle.Invariant == "" || slices.Contains(applied, f.Oracle.Invariant) {
		return false
	}
	switch answer.Kind {
	case kavach.Error, kavach.Crash, kavach.Hang:
		return kavach.ErrorSignature(out) == kavach.ErrorSignature(answer)
	}
	return false
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

// fixtureStep is the fixture's step a variant's step n came from, when
// the variant was made from a window or slice whose steps stepOf maps to
// the fixture's; 0 stays 0 (no step).
func fixtureStep(v variants.Variant, n int, stepOf func(int) int) int {
	if n == 0 {
		return 0
	}
	if o := originOf(v, n); o != 0 {
		return stepOf(o)
	}
	return stepOf(n)
}
