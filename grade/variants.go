package grade

import (
	"context"
	"fmt"
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
func learnSchema(fx *fixtures.Fixture, old kavach.Launch, opts Options) (kavach.Schema, string) {
	learner, ok := opts.Launcher.(kavach.SchemaLearner)
	v, vok := opts.Codec.(kavach.Variator)
	if !ok || !vok {
		return nil, "field types guessed: the integration cannot ask the build"
	}
	var kinds []string
	seen := map[string]bool{}
	for _, s := range kavach.Steps(fx.Events, opts.Codec) {
		if k, _, ok := v.Fields(s.Request.Data, nil); ok && !seen[k] {
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	p, err := opts.Launcher.Start(old)
	if err != nil {
		return nil, "field types guessed: " + err.Error()
	}
	defer p.Stop()
	schema, err := learner.Learn(p.Addr(), kinds)
	if err != nil {
		return nil, "field types guessed: " + err.Error()
	}
	return schema, "field types learned from the old build"
}

// runVariants generates the variants, replays each on the old build,
// keeps those that reproduce the failure (or, for regression variants,
// that the old build handles), and replays the kept ones on the new build
// (docs/design.md §4, steps 4 and 5), Jobs at a time.
func runVariants(ctx context.Context, fx *fixtures.Fixture, old, new kavach.Launch, ropts replay.Options, noise replay.Noise, opts Options) VariantsEvidence {
	ve := VariantsEvidence{Min: opts.MinVariants, List: []VariantEvidence{}}
	variator, ok := opts.Codec.(kavach.Variator)
	if !ok {
		ve.Note = "the integration cannot vary requests: no variants"
		return ve
	}
	schema, note := learnSchema(fx, old, opts)
	vs := variants.Generate(fx.Events, fx.Failure.Step, variants.Options{
		Codec: opts.Codec, Variator: variator, Schema: schema, Budget: opts.Variants, Seed: opts.Seed})
	ve.Note = note
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
					results[i] = VariantEvidence{K: vs[i].K, Description: vs[i].Description, Regression: vs[i].Regression, Skipped: true}
					continue
				}
				results[i] = runVariant(ctx, vs[i], *fx.Failure, old, new, ropts, noise, opts)
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
	return ve
}

// runVariant replays one variant on the old build and, if it is kept, on
// the new one, and says where the new build failed it.
func runVariant(ctx context.Context, v variants.Variant, f kavach.Failure, old, new kavach.Launch, ropts replay.Options, noise replay.Noise, opts Options) VariantEvidence {
	r := VariantEvidence{K: v.K, Description: v.Description, Regression: v.Regression}
	ropts.Shift = v.ShiftAt
	ot, err := runRetry(ctx, old, v.Events, ropts)
	if err != nil {
		r.StartError = fmt.Sprintf("variant %d: the old build did not start, twice: %v", v.K, err)
		return r
	}
	oldInv := checkInvariants(opts.Invariants, opts.Codec, ot)
	// failedAt: the step failed: the recorded failure recurred, or it crashed or hung.
	failedAt := func(s replay.StepResult, inv checked) bool {
		return recurs(f, s.Outcome, inv.violated[s.N]) || s.Outcome.Kind == kavach.Crash || s.Outcome.Kind == kavach.Hang
	}
	limit := 0 // steps before limit must give the old build's outputs
	if v.Regression {
		r.Kept = true
		for _, s := range ot.Steps {
			if s.Ran && failedAt(s, oldInv) {
				r.Kept, r.OldStep, r.OldOutcome = false, s.N, s.Outcome
				break
			}
		}
		limit = len(ot.Steps) + 1
	} else {
		for _, s := range ot.Steps {
			if s.Ran && recurs(f, s.Outcome, oldInv.violated[s.N]) {
				r.Kept, r.OldStep, r.OldOutcome = true, s.N, s.Outcome
				if m := oldInv.message(s.N); m != "" {
					r.OldOutcome.Detail = m
				}
				break
			}
		}
		limit = r.OldStep
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
	newInv := checkInvariants(opts.Invariants, opts.Codec, nt)
	for i, s := range nt.Steps {
		if !s.Ran {
			break
		}
		if failedAt(s, newInv) || len(newInv.violated[s.N]) > 0 {
			r.FailedStep, r.NewOutcome = s.N, s.Outcome
			if m := newInv.message(s.N); m != "" && s.Outcome.Kind != kavach.Crash && s.Outcome.Kind != kavach.Hang {
				r.NewOutcome.Detail = m
			}
			return r
		}
		if s.N >= limit {
			continue
		}
		var counted []replay.Diff
		for _, d := range replay.Compare(ot.Steps[i], s) {
			if origin := originOf(v, s.N); origin == 0 || !noise.Covers(origin, d.Path) {
				counted = append(counted, d)
			}
		}
		if len(counted) > 0 {
			r.FailedStep, r.NewOutcome, r.Diffs = s.N, s.Outcome, counted
			r.OldOutcome = ot.Steps[i].Outcome
			return r
		}
	}
	r.NewOutcome = kavach.Outcome{Kind: kavach.OK, Detail: fmt.Sprintf("no failure in %d steps", len(nt.Steps))}
	return r
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

func originOf(v variants.Variant, step int) int {
	if step-1 < len(v.Origin) {
		return v.Origin[step-1]
	}
	return 0
}
