package grade_test

import (
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/replay"
)

// TestDeriveObservedInputs: after the failing step (2, SETRANGE on a
// missing key that the old build answered and the fix refuses), a step
// that answers differently is judged by the fingerprints of what it read
// on the two builds. Each case edits one fact of the evidence; the
// verdict and the explanation follow from the evidence alone.
func TestDeriveObservedInputs(t *testing.T) {
	t.Parallel()
	ok := kavach.Outcome{Kind: kavach.OK}
	wrongType := kavach.Outcome{Kind: kavach.Error, Class: "WRONGTYPE", Detail: "WRONGTYPE Operation against a key holding the wrong kind of value"}
	notInt := kavach.Outcome{Kind: kavach.Error, Class: "ERR", Detail: "ERR value is not an integer or out of range"}
	fp := func(digest string) map[string]string {
		return map[string]string{"db": "0", "k digest": digest, "k expire": "-1"}
	}
	diff := []replay.Diff{{Step: 3, Path: "reply[0]", Want: `"0"`, Got: `"3"`}}
	base := func() grade.Evidence {
		return grade.Evidence{
			Failure:       kavach.Failure{Step: 2, Oracle: kavach.Oracle{Invariant: "setrange-offset"}, Signature: "invariant:setrange-offset"},
			Inputs:        grade.RuleObserved,
			FailureFamily: []string{"SETRANGE"},
			Old: grade.OldEvidence{Steps: []grade.StepEvidence{
				{Step: 1, Ran: true, Recorded: ok, Outcome: ok},
				{Step: 2, Ran: true, Recorded: ok, Outcome: ok, Violated: []string{"setrange-offset"}},
				{Step: 3, Ran: true, Recorded: ok, Outcome: ok, Inputs: fp("aaaa")}}},
			New: grade.NewEvidence{Steps: []grade.StepEvidence{
				{Step: 1, Ran: true, Recorded: ok, Outcome: ok},
				{Step: 2, Ran: true, Recorded: ok, Outcome: notInt, Command: "SETRANGE", Keys: []string{"k"}, Writes: []string{"k"}, WritesKnown: true},
				{Step: 3, Ran: true, Recorded: ok, Outcome: ok, Command: "LLEN", Keys: []string{"other"}, WritesKnown: true, Inputs: fp("aaaa")}}},
			Variants: grade.VariantsEvidence{Min: 0},
		}
	}
	for _, tc := range []struct {
		why    string
		edit   func(*grade.Evidence)
		want   string
		reason string // the explanation at step 3, if any
	}{
		{"nothing differs", func(*grade.Evidence) {}, "fixed", ""},
		{"the same inputs, another answer", func(e *grade.Evidence) { e.New.Steps[2].Diffs = diff }, "diverged@3", ""},
		{"inputs that differ explain it, keys or no keys", func(e *grade.Evidence) {
			e.New.Steps[2].Diffs, e.New.Steps[2].Inputs = diff, fp("bbbb")
		}, "fixed", grade.ReasonInputs},
		{"a field the old build's replays disagree on is not compared", func(e *grade.Evidence) {
			e.New.Steps[2].Diffs, e.New.Steps[2].Inputs = diff, fp("bbbb")
			e.New.Steps[2].InputsNoise = []string{"k digest"}
		}, "diverged@3", ""},
		{"a key only one build has", func(e *grade.Evidence) {
			e.New.Steps[2].Diffs = diff
			e.New.Steps[2].Inputs = map[string]string{"db": "0", "k digest": "aaaa", "k expire": "-1", "j digest": "cccc"}
		}, "fixed", grade.ReasonInputs},
		{"both refuse the failing command on the same inputs: a changed refusal", func(e *grade.Evidence) {
			e.Old.Steps[2].Outcome, e.New.Steps[2].Recorded = wrongType, wrongType
			e.New.Steps[2].Outcome, e.New.Steps[2].Command = notInt, "SETRANGE"
			e.New.Steps[2].Diffs = []replay.Diff{{Step: 3, Path: "reply[0]"}}
		}, "fixed", grade.ReasonRefusal},
		{"both refuse another command on the same inputs", func(e *grade.Evidence) {
			e.Old.Steps[2].Outcome, e.New.Steps[2].Recorded = wrongType, wrongType
			e.New.Steps[2].Outcome, e.New.Steps[2].Command = notInt, "INCRBY"
			e.New.Steps[2].Diffs = []replay.Diff{{Step: 3, Path: "reply[0]"}}
		}, "diverged@3", ""},
		{"a refusal where the old build answered, whatever the inputs", func(e *grade.Evidence) {
			e.New.Steps[2].Outcome, e.New.Steps[2].Command = notInt, "SETRANGE"
			e.New.Steps[2].Diffs, e.New.Steps[2].Inputs = diff, fp("bbbb")
		}, "diverged@3", ""},
		{"the old build showed the failure there", func(e *grade.Evidence) {
			e.Old.Steps[2].Violated = []string{"setrange-offset"}
			e.New.Steps[2].Diffs = diff
		}, "fixed", grade.ReasonShown},
		{"no fingerprint on one build: the inferred rule, nothing written there", func(e *grade.Evidence) {
			e.New.Steps[2].Diffs, e.New.Steps[2].Inputs = diff, nil
		}, "diverged@3", ""},
		{"no fingerprint: the inferred rule, the key the failing step wrote", func(e *grade.Evidence) {
			e.New.Steps[2].Diffs, e.New.Steps[2].Inputs, e.New.Steps[2].Keys = diff, nil, []string{"k"}
		}, "fixed", grade.ReasonDepends},
		{"a crash after the failure", func(e *grade.Evidence) {
			e.New.Steps[2].Outcome, e.New.Steps[2].Inputs = kavach.Outcome{Kind: kavach.Crash}, fp("bbbb")
		}, "diverged@3", ""},
	} {
		ev := base()
		tc.edit(&ev)
		parts, findings := grade.Derive(ev)
		if parts.String() != tc.want {
			t.Errorf("%s: %s, want %s; findings %+v", tc.why, parts, tc.want, findings)
		}
		ex := grade.Explain(ev)
		got := ""
		for _, e := range ex {
			if e.Step == 3 {
				got = e.Reason
				if want := map[bool]string{true: grade.RuleObserved, false: grade.RuleInferred}[ev.New.Steps[2].Inputs != nil]; e.Rule != want {
					t.Errorf("%s: judged by rule %s, want %s", tc.why, e.Rule, want)
				}
			}
		}
		if got != tc.reason {
			t.Errorf("%s: explained as %q, want %q (%+v)", tc.why, got, tc.reason, ex)
		}
		for _, f := range findings {
			if f.Kind == grade.Diverged && f.Step == 3 && f.Outcome.Kind != kavach.Crash && f.Rule == "" {
				t.Errorf("%s: finding after the failure names no rule: %+v", tc.why, f)
			}
		}
	}
}
