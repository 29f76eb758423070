package replay_test

import (
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/replay"
)

// TestStepsAfterTheFailureAreNotJudged: steps after the failure are
// shown, not judged, as kavach diff holds its old build to them (a crash
// or a hang there included: the old build reproduced the incident); and an
// invariant failure is reproduced only where the invariant is violated.
func TestStepsAfterTheFailureAreNotJudged(t *testing.T) {
	ok := kavach.Outcome{Kind: kavach.OK}
	rec := []replay.StepResult{
		{N: 1, Ran: true, Outcome: ok, Output: []any{"a"}},
		{N: 2, Ran: true, Outcome: kavach.Outcome{Kind: kavach.Error, Class: "ERR"}, Output: []any{"e"}},
		{N: 3, Ran: true, Outcome: ok, Output: []any{"c"}},
	}
	failure := &kavach.Failure{Step: 2, Oracle: kavach.Oracle{Kind: kavach.Error, Class: "ERR"}, Signature: "error:ERR"}
	trace := func(third kavach.Outcome, output string) *replay.Trace {
		return &replay.Trace{Steps: []replay.StepResult{rec[0], rec[1], {N: 3, Ran: true, Outcome: third, Output: []any{output}}}}
	}
	if v := replay.Verify(rec, failure, trace(ok, "other"), replay.Noise{}); !v.Reproduced {
		t.Errorf("an answer after the failure that differs is not judged: %+v", v)
	}
	for _, broke := range []kavach.OutcomeKind{kavach.Hang, kavach.Crash} {
		v := replay.Verify(rec, failure, trace(kavach.Outcome{Kind: broke}, ""), replay.Noise{})
		if !v.Reproduced || v.Steps[2].Status != replay.StatusAfterFailed || v.Steps[2].Outcome.Kind != broke {
			t.Errorf("a %s after the failure: %+v, want shown, not judged", broke, v)
		}
	}
	// Before the failure, a crash where the recording answered counts.
	crashFirst := &replay.Trace{Steps: []replay.StepResult{{N: 1, Ran: true, Outcome: kavach.Outcome{Kind: kavach.Crash}}, rec[1], rec[2]}}
	if v := replay.Verify(rec, failure, crashFirst, replay.Noise{}); v.Reproduced || v.FirstDifferent != 1 {
		t.Errorf("a crash before the failure: reproduced %v, first different %d", v.Reproduced, v.FirstDifferent)
	}

	inv := &kavach.Failure{Step: 2, Oracle: kavach.Oracle{Invariant: "right"}, Signature: "invariant:right"}
	if v := replay.Verify(rec, inv, trace(ok, "c"), replay.Noise{}); v.Reproduced {
		t.Error("an invariant failure with nothing to judge it counted as reproduced")
	}
	for _, tc := range []struct {
		violated bool
		want     bool
	}{{true, true}, {false, false}} {
		v := replay.VerifyInvariant(rec, inv, trace(ok, "c"), replay.Noise{}, func(n int) bool { return tc.violated && n == 2 })
		if v.Reproduced != tc.want {
			t.Errorf("invariant violated %v at the failing step: reproduced %v", tc.violated, v.Reproduced)
		}
	}
}

// TestNoiseSaysHowOftenItDiffered: a field that differed from the
// recording in only some of the old build's replays is an answer that
// depends on timing, and the noise list says so.
func TestNoiseSaysHowOftenItDiffered(t *testing.T) {
	ok := kavach.Outcome{Kind: kavach.OK}
	rec := []replay.StepResult{{N: 1, Ran: true, Outcome: ok, Output: []any{int64(2)}}}
	same := &replay.Trace{Steps: []replay.StepResult{{N: 1, Ran: true, Outcome: ok, Output: []any{int64(2)}}}}
	other := &replay.Trace{Steps: []replay.StepResult{{N: 1, Ran: true, Outcome: ok, Output: []any{int64(3)}}}}
	n := replay.FindNoise(rec, 0, same, other, same)
	seen := n.Seen(rec, same, other, same)
	if len(seen) != 1 || seen[0].Differed != 1 || seen[0].Of != 3 {
		t.Fatalf("noise %+v, want one field that differed in 1 of 3 replays", seen)
	}
}

// TestStepsAfterAHangAreNotRun: when the failure is a hang, the replay
// stops there; the steps after it show as not run (never "ok"), and do
// not count against a replay that reproduced the hang.
func TestStepsAfterAHangAreNotRun(t *testing.T) {
	ok := kavach.Outcome{Kind: kavach.OK}
	hang := kavach.Outcome{Kind: kavach.Hang}
	rec := []replay.StepResult{
		{N: 1, Ran: true, Outcome: ok, Output: []any{"a"}},
		{N: 2, Ran: true, Outcome: hang},
		{N: 3, Ran: true, Outcome: ok, Output: []any{"c"}},
	}
	failure := &kavach.Failure{Step: 2, Oracle: kavach.Oracle{Kind: kavach.Hang}, Signature: "hang"}
	tr := &replay.Trace{Steps: []replay.StepResult{rec[0], {N: 2, Ran: true, Outcome: hang}}}
	v := replay.Verify(rec, failure, tr, replay.Noise{})
	if !v.Reproduced {
		t.Errorf("the hang recurred, yet not reproduced: %+v", v)
	}
	if got := v.Steps[2]; got.Status != replay.StatusNotRun || got.Outcome.Kind == kavach.OK {
		t.Errorf("the step after the hang: %+v, want not run", got)
	}
}
