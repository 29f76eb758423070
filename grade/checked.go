package grade

import (
	"slices"

	"github.com/kavach-dev/kavach"
)

// Checked is what a diff checked, in numbers: the "checked:" lines
// kavach diff prints and the MCP tool's summary.
type Checked struct {
	StepsCompared      int    `json:"steps_compared" jsonschema:"steps before the failure compared with the recording on the new build"`
	StepsBeforeFailure int    `json:"steps_before_failure" jsonschema:"steps the fixture has before the failing step"`
	NoiseFields        int    `json:"noise_fields" jsonschema:"output fields excluded from comparison because they differ between replays of the old build"`
	FailureStep        int    `json:"failure_step" jsonschema:"the recorded failing step"`
	FailureSignature   string `json:"failure_signature" jsonschema:"how it failed, e.g. crash or error:WRONGTYPE"`
	OldOutcome         string `json:"old_outcome" jsonschema:"the old build's outcome at the failing step"`
	NewOutcome         string `json:"new_outcome" jsonschema:"the new build's outcome at the failing step"`
	VariantsGenerated  int    `json:"variants_generated" jsonschema:"variants of the incident generated"`
	VariantsReproduce  int    `json:"variants_reproducing" jsonschema:"of those, failing on the old build the recorded way"`
	MinVariants        int    `json:"min_variants" jsonschema:"reproducing variants needed to call it fixed"`
	RegressionVariants int    `json:"regression_variants" jsonschema:"variants of earlier inputs, cut before the failure"`
	RegressionHandled  int    `json:"regression_handled" jsonschema:"of those, handled by the old build without failing"`
	VariantsPassing    int    `json:"variants_passing" jsonschema:"kept variants the new build passes"`
	StepsAfterFailure  int    `json:"steps_after_failure" jsonschema:"steps the fixture has after the failing step"`
	StepsAfterCompared int    `json:"steps_after_compared" jsonschema:"of those, steps the new build answered, compared with the recording"`
	// StepsAfterExplained: of those, steps whose difference from the
	// recording the fix explains.
	StepsAfterExplained int `json:"steps_after_explained" jsonschema:"of those, steps whose difference from the recording the fix explains"`
	// StepsAfterExplainedBy counts them by reason (inputs-differ,
	// changed-refusal, failure-shown, depends-on-change).
	StepsAfterExplainedBy []ReasonCount `json:"steps_after_explained_by,omitempty" jsonschema:"the explained steps counted by reason"`
	// AfterRule is how the steps after the failure were judged: observed
	// (fingerprints of what each step read) or inferred, with why.
	AfterRule  string `json:"after_rule,omitempty" jsonschema:"how steps after the failure were judged: observed (the state each read, fingerprinted on both builds) or inferred (keys a changed step wrote), with why"`
	Invariants int    `json:"invariants" jsonschema:"invariants checked on every step"`
	// Contract: the fixture has no failure; StepsBeforeFailure is then
	// every step.
	Contract       bool `json:"contract,omitempty" jsonschema:"the fixture is a contract (no failure): every step is compared with the recording"`
	OldUnmet       int  `json:"old_unmet,omitempty" jsonschema:"for a contract, invariants the old build does not meet (a feature's), which the new build must"`
	InvariantsHeld int  `json:"invariants_held" jsonschema:"of those, held on the new build"`
	// Contained are the steps not compared because Kavach answered them
	// in the build's place (or their reply was known to differ): the
	// builds shared the machine's network (Report.Network).
	Contained []int `json:"steps_contained,omitempty" jsonschema:"steps answered by Kavach in the build's place (network namespaces unavailable), not compared"`
}

// Checked counts what the report's evidence checked.
func (rep *Report) Checked() Checked {
	ev := rep.Evidence
	ck := Checked{
		StepsBeforeFailure: ev.Failure.Step - 1, NoiseFields: len(ev.Noise),
		FailureStep: ev.Failure.Step, FailureSignature: ev.Failure.Signature,
		OldOutcome:        stepOutcome(ev.Old.Steps, ev.Failure.Step, ev.Failure.Oracle.Invariant),
		NewOutcome:        stepOutcome(ev.New.Steps, ev.Failure.Step, ev.Failure.Oracle.Invariant),
		VariantsGenerated: ev.Variants.Generated, VariantsReproduce: ev.Variants.Reproducing, MinVariants: ev.Variants.Min,
		RegressionVariants: ev.Variants.Regression, RegressionHandled: ev.Variants.Handled, VariantsPassing: ev.Variants.Passing,
		Invariants: len(ev.Invariants),
	}
	diverged := map[int]bool{}
	for _, f := range rep.Findings {
		if f.Kind == Diverged {
			diverged[f.Step] = true
		}
	}
	if ev.Contract {
		// Every step is held to the recording: "before the failure" is
		// every step, and there is no failure.
		ck.Contract, ck.StepsBeforeFailure = true, len(ev.New.Steps)+ev.Omitted
		ck.StepsCompared = ev.Omitted
		for _, s := range ev.New.Steps {
			if s.Contained != "" {
				ck.Contained = append(ck.Contained, s.Step)
			} else if s.Ran && !s.Foreign {
				ck.StepsCompared++
			}
		}
		ck.OldUnmet = len(ev.OldUnmet)
		for _, inv := range ev.Invariants {
			if inv.Held {
				ck.InvariantsHeld++
			}
		}
		return ck
	}
	ck.StepsCompared = ev.Omitted
	for _, s := range ev.New.Steps {
		if s.Contained != "" {
			ck.Contained = append(ck.Contained, s.Step)
		}
		if s.Step < ev.Failure.Step && s.Ran && !s.uncompared() {
			ck.StepsCompared++
		}
		if s.Step > ev.Failure.Step {
			ck.StepsAfterFailure++
			if s.Ran && !s.uncompared() {
				ck.StepsAfterCompared++
			}
		}
	}
	explained := rep.Explained
	if explained == nil {
		explained = Explain(ev) // a report from before explained steps were listed
	}
	ck.StepsAfterExplained, ck.StepsAfterExplainedBy, ck.AfterRule = len(explained), ExplainedBy(explained), ev.Inputs
	for _, inv := range ev.Invariants {
		if inv.Held {
			ck.InvariantsHeld++
		}
	}
	return ck
}

// stepOutcome is step n's outcome in steps, "not run", or "?".
//
// When the failure is an invariant's (inv), a step's answer is ok either
// way: what tells is whether inv held, which it says: "invariant:NAME
// (outcome ok)" as the failure's signature reads, or "ok (NAME held)".
func stepOutcome(steps []StepEvidence, n int, inv string) string {
	for _, s := range steps {
		if s.Step == n {
			switch {
			case !s.Ran:
				return "not run"
			case inv != "" && slices.Contains(s.Violated, inv):
				return "invariant:" + inv + " (outcome " + s.Outcome.String() + ")"
			case inv != "":
				return s.Outcome.String() + " (" + inv + " held)"
			}
			return s.Outcome.String()
		}
	}
	return "?"
}

// outcomeAt is the outcome of step n of steps, or the zero outcome.
func outcomeAt(steps []StepEvidence, n int) kavach.Outcome {
	for _, s := range steps {
		if s.Step == n {
			return s.Outcome
		}
	}
	return kavach.Outcome{}
}
