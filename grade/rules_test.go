package grade_test

import (
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/replay"
)

// variantIncident is the evidence of an incident whose failing step 3
// crashed, as recorded and on the old build; its step 2's reply is noise
// at reply[0].
func variantIncident() grade.Evidence {
	ok, crash := kavach.Outcome{Kind: kavach.OK}, kavach.Outcome{Kind: kavach.Crash}
	return grade.Evidence{
		Failure: kavach.Failure{Step: 3, Oracle: kavach.Oracle{Kind: kavach.Crash}, Signature: "crash"},
		Old: grade.OldEvidence{Steps: []grade.StepEvidence{
			{Step: 1, Ran: true, Recorded: ok, Outcome: ok},
			{Step: 2, Ran: true, Recorded: ok, Outcome: ok},
			{Step: 3, Ran: true, Recorded: crash, Outcome: crash},
		}},
		Noise: []replay.NoiseField{{Step: 2, Path: "reply[0]"}},
	}
}

// reply is a build's answer at a variant's step.
func reply(kind kavach.OutcomeKind) *grade.VariantReply {
	return &grade.VariantReply{Ran: true, Outcome: kavach.Outcome{Kind: kind}}
}

// TestJudgeVariant checks the variant rule both ways, from a variant's
// steps alone: each row's variant is judged as the row says, and each
// red row differs from a green one by one piece of evidence that only
// the rule it names can see.
func TestJudgeVariant(t *testing.T) {
	t.Parallel()
	ev := variantIncident()
	diff := []replay.Diff{{Step: 2, Path: "reply[0]", Want: `"a"`, Got: `"b"`}}
	for _, tc := range []struct {
		name    string
		variant grade.VariantEvidence
		want    string // VariantEvidence.Result
	}{
		{"the old build crashes at the varied failing request; the new build answers it: passed",
			grade.VariantEvidence{FailsAt: 3, Replayed: 3, Steps: []grade.VariantStep{
				{Step: 3, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.OK)}}},
			"kept at step 3, passed"},
		{"the new build crashes there too: failed (a crash)",
			grade.VariantEvidence{FailsAt: 3, Replayed: 3, Steps: []grade.VariantStep{
				{Step: 3, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.Crash)}}},
			"kept at step 3, failed at step 3"},
		{"the old build answers the varied failing request: not kept",
			grade.VariantEvidence{FailsAt: 3, Replayed: 3, Steps: []grade.VariantStep{
				{Step: 3, Origin: 3, Old: *reply(kavach.OK)}}},
			"not kept"},
		{"the old build crashes at another step, not the varied failing request: not kept",
			grade.VariantEvidence{FailsAt: 3, Replayed: 3, Steps: []grade.VariantStep{
				{Step: 2, Origin: 2, Old: *reply(kavach.Crash)},
				{Step: 3, Origin: 3, Old: grade.VariantReply{}}}},
			"not kept"},
		{"before the failure, a difference from the old build's answer in a noise field: passed",
			grade.VariantEvidence{FailsAt: 3, Replayed: 3, Steps: []grade.VariantStep{
				{Step: 2, Origin: 2, Old: *reply(kavach.OK), New: reply(kavach.OK), Diffs: diff},
				{Step: 3, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.OK)}}},
			"kept at step 3, passed"},
		{"the same difference at a step the variant added (no origin, no noise): failed",
			grade.VariantEvidence{FailsAt: 3, Replayed: 3, Steps: []grade.VariantStep{
				{Step: 2, Old: *reply(kavach.OK), New: reply(kavach.OK), Diffs: diff},
				{Step: 3, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.OK)}}},
			"kept at step 3, failed at step 2"},
		{"another answer before the failure from a state seen to differ (the old build's bug wrote it silently): passed",
			grade.VariantEvidence{FailsAt: 3, Replayed: 3, Steps: []grade.VariantStep{
				{Step: 2, Old: *reply(kavach.OK), New: reply(kavach.OK), Diffs: diff,
					InputsDiffer: []grade.InputField{{Field: "stock digest", Old: "a1", New: "b2"}}},
				{Step: 3, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.OK)}}},
			"kept at step 3, passed"},
		{"the state seen to differ, but the new build crashes there: failed",
			grade.VariantEvidence{FailsAt: 3, Replayed: 3, Steps: []grade.VariantStep{
				{Step: 2, Old: *reply(kavach.OK), New: reply(kavach.Crash), Diffs: diff,
					InputsDiffer: []grade.InputField{{Field: "stock digest", Old: "a1", New: "b2"}}},
				{Step: 3, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.OK)}}},
			"kept at step 3, failed at step 2"},
		{"an error both builds give alike before the failure is none of the new build's doing: passed",
			grade.VariantEvidence{FailsAt: 3, Replayed: 3, Steps: []grade.VariantStep{
				{Step: 2, Origin: 2, Old: *reply(kavach.Error), New: reply(kavach.Error)},
				{Step: 3, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.OK)}}},
			"kept at step 3, passed"},
		{"a regression variant the old build handles and the new build answers alike: passed",
			grade.VariantEvidence{Regression: true, Replayed: 2},
			"kept, passed"},
		{"a regression variant the new build answers otherwise: failed",
			grade.VariantEvidence{Regression: true, Replayed: 2, Steps: []grade.VariantStep{
				{Step: 1, Origin: 1, Old: *reply(kavach.OK), New: reply(kavach.OK), Diffs: []replay.Diff{{Step: 1, Path: "reply[0]"}}}}},
			"kept, failed at step 1"},
		{"the same answer otherwise, where the old build asked again answered its first replay otherwise: passed",
			grade.VariantEvidence{Regression: true, Replayed: 2, Steps: []grade.VariantStep{
				{Step: 1, Origin: 1, Old: *reply(kavach.OK), New: reply(kavach.OK), Diffs: []replay.Diff{{Step: 1, Path: "reply[0]"}},
					OldNoise: []string{"reply[0]"}}}},
			"kept, passed"},
		{"the old build asked again varied elsewhere in the step: failed",
			grade.VariantEvidence{Regression: true, Replayed: 2, Steps: []grade.VariantStep{
				{Step: 1, Origin: 1, Old: *reply(kavach.OK), New: reply(kavach.OK), Diffs: []replay.Diff{{Step: 1, Path: "reply[0]"}},
					OldNoise: []string{"reply[1]"}}}},
			"kept, failed at step 1"},
		{"a regression variant the old build crashes on: not kept",
			grade.VariantEvidence{Regression: true, Replayed: 2, Steps: []grade.VariantStep{
				{Step: 1, Origin: 1, Old: *reply(kavach.Crash)}}},
			"not kept"},
		{"a mode variant whose mode request the old build takes: kept, and passed",
			grade.VariantEvidence{Kind: "mode", FailsAt: 3, Replayed: 4, Steps: []grade.VariantStep{
				{Step: 3, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.OK)}}},
			"kept at step 3, passed"},
		{"the same variant, its mode request refused by the old build (a mode it lacks): not kept",
			grade.VariantEvidence{Kind: "mode", FailsAt: 3, Replayed: 4, Steps: []grade.VariantStep{
				{Step: 3, Old: *reply(kavach.Error), New: reply(kavach.OK)},
				{Step: 4, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.OK)}}},
			"not kept"},
		{"a regression mode variant whose mode request the old build refused: not kept",
			grade.VariantEvidence{Kind: "mode", Regression: true, Replayed: 2, Steps: []grade.VariantStep{
				{Step: 1, Old: *reply(kavach.Error), New: reply(kavach.OK), Diffs: []replay.Diff{{Step: 1, Path: "reply"}}}}},
			"not kept"},
		{"another kind's inserted step refused alike by both builds: kept, passed",
			grade.VariantEvidence{Kind: "type", FailsAt: 3, Replayed: 4, Steps: []grade.VariantStep{
				{Step: 3, Old: *reply(kavach.Error), New: reply(kavach.Error)},
				{Step: 4, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.OK)}}},
			"kept at step 4, passed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := grade.JudgeVariant(ev, tc.variant)
			if got.Result() != tc.want {
				t.Errorf("%s: judged %q, want %q (new outcome %+v, diffs %v)", tc.name, got.Result(), tc.want, got.NewOutcome, got.Diffs)
			}
		})
	}
}

// TestJudgeVariants: a report's variants judged again agree with those it
// wrote, until one variant's evidence is edited; a variant not run, or
// from a report written before variants kept their steps, is taken as
// written.
func TestJudgeVariants(t *testing.T) {
	t.Parallel()
	ev := variantIncident()
	passed := grade.JudgeVariant(ev, grade.VariantEvidence{K: 1, FailsAt: 3, Replayed: 3, Steps: []grade.VariantStep{
		{Step: 3, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.OK)}}})
	old := grade.VariantEvidence{K: 2, Kept: true, OldStep: 3} // no steps kept: a report from before
	skipped := grade.VariantEvidence{K: 3, Skipped: true}
	ev.Variants = grade.VariantsEvidence{Min: 1, List: []grade.VariantEvidence{passed, old, skipped}}
	judged, changed := grade.JudgeVariants(ev)
	if len(changed) != 0 || judged.Variants.Reproducing != 2 || judged.Variants.Passing != 2 {
		t.Fatalf("as written: changed %+v, %d reproducing, %d passing; want none changed, 2 and 2", changed, judged.Variants.Reproducing, judged.Variants.Passing)
	}

	// The new build's side edited: it crashed at the varied failing request.
	edited := ev
	edited.Variants.List = []grade.VariantEvidence{passed, old, skipped}
	edited.Variants.List[0].Steps = []grade.VariantStep{{Step: 3, Origin: 3, Old: *reply(kavach.Crash), New: reply(kavach.Crash)}}
	judged, changed = grade.JudgeVariants(edited)
	want := grade.VariantChange{K: 1, Written: "kept at step 3, passed", Derived: "kept at step 3, failed at step 3"}
	if len(changed) != 1 || changed[0] != want {
		t.Fatalf("edited: changed %+v, want %+v", changed, want)
	}
	if v, _ := grade.Derive(judged); v.String() != "variant_failed(1)@3" {
		t.Errorf("edited: derived %s, want variant_failed(1)@3", v)
	}
	if ev.Variants.List[0].Steps[0].New.Outcome.Kind != kavach.OK {
		t.Error("JudgeVariants changed the evidence it was given")
	}
}
