package grade_test

import (
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/replay"
)

// TestReplayJudgesAsDiffsOldBuild: kavach replay's judgment of a build
// (replay.CheckStep, with the noise where its runs differ from the
// recording) says reproduced exactly when kavach diff, given that build as
// its old one, finds that it reproduces the incident or replays its
// contract (Derive not unverified by not-reproduced, not-replayed or
// contained). Each row is a case where the two rules could part.
func TestReplayJudgesAsDiffsOldBuild(t *testing.T) {
	t.Parallel()
	ok := kavach.Outcome{Kind: kavach.OK}
	errOut := kavach.Outcome{Kind: kavach.Error, Class: "ERR"}
	crash := kavach.Outcome{Kind: kavach.Crash}
	step := func(n int, o kavach.Outcome, out string) replay.StepResult {
		return replay.StepResult{N: n, Ran: true, Outcome: o, Output: []any{out}}
	}
	recorded := []replay.StepResult{step(1, ok, "a"), step(2, errOut, "e"), step(3, ok, "c")}
	incident := &kavach.Failure{Step: 2, Oracle: kavach.Oracle{Kind: kavach.Error, Class: "ERR"}, Signature: "error:ERR"}
	invariant := &kavach.Failure{Step: 2, Oracle: kavach.Oracle{Invariant: "right"}, Signature: "invariant:right"}
	contained := func(s replay.StepResult) replay.StepResult { s.Contained = "withheld"; return s }
	notRun := replay.StepResult{}
	for _, tc := range []struct {
		name     string
		failure  *kavach.Failure
		replayed []replay.StepResult
		violated bool // the invariant is violated at the failing step
		want     bool
	}{
		{"contract replayed as recorded", nil, recorded, false, true},
		{"contract: an output that differs is noise", nil, []replay.StepResult{recorded[0], step(2, errOut, "other"), recorded[2]}, false, true},
		{"contract: an outcome that differs", nil, []replay.StepResult{recorded[0], step(2, ok, "e"), recorded[2]}, false, false},
		{"contract: a step not run", nil, []replay.StepResult{recorded[0], recorded[1], notRun}, false, false},
		{"contract: a step contained", nil, []replay.StepResult{recorded[0], contained(recorded[1]), recorded[2]}, false, true},
		{"incident reproduced", incident, recorded, false, true},
		{"incident: an output before the failure differs", incident, []replay.StepResult{step(1, ok, "other"), recorded[1], recorded[2]}, false, true},
		{"incident: an outcome before the failure differs", incident, []replay.StepResult{step(1, errOut, "a"), recorded[1], recorded[2]}, false, false},
		{"incident: the failing step does not fail", incident, []replay.StepResult{recorded[0], step(2, ok, "e"), recorded[2]}, false, false},
		{"incident: a crash after the failure", incident, []replay.StepResult{recorded[0], recorded[1], step(3, crash, "")}, false, true},
		{"incident: not run after the failure", incident, []replay.StepResult{recorded[0], recorded[1], notRun}, false, true},
		{"incident: the failing step not run", incident, []replay.StepResult{recorded[0], notRun, notRun}, false, false},
		{"incident: the failing step contained", incident, []replay.StepResult{recorded[0], contained(recorded[1]), recorded[2]}, false, false},
		{"invariant violated at the failing step", invariant, []replay.StepResult{recorded[0], step(2, ok, "e"), recorded[2]}, true, true},
		{"invariant not violated at the failing step", invariant, []replay.StepResult{recorded[0], step(2, ok, "e"), recorded[2]}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replayed := make([]replay.StepResult, len(tc.replayed))
			for i, s := range tc.replayed {
				if s.N == 0 {
					s.N = i + 1 // not run
				}
				replayed[i] = s
			}
			violated := func(n int) bool { return tc.violated && tc.failure != nil && n == tc.failure.Step }

			// kavach replay: noise where the runs differ from the recording.
			noise := replay.Noise{}
			var seen []replay.NoiseField
			v := replay.Verification{Reproduced: true}
			for i, want := range recorded {
				noise.AddStep(want, replayed[i])
				seen = append(seen, noise.SeenStep(want, replayed[i])...)
				v.Count(replay.CheckStep(want, replayed[i], tc.failure, noise, violated))
			}

			// kavach diff: the same replay as its old build's.
			ev := grade.Evidence{Contract: tc.failure == nil, Noise: seen}
			if tc.failure != nil {
				ev.Failure = *tc.failure
			}
			for i, want := range recorded {
				got := replayed[i]
				se := grade.StepEvidence{Step: want.N, Ran: got.Ran, Recorded: want.Outcome, Outcome: got.Outcome, Contained: got.Contained}
				if violated(want.N) {
					se.Violated = []string{"right"}
				}
				ev.Old.Steps = append(ev.Old.Steps, se)
				ev.New.Steps = append(ev.New.Steps, grade.StepEvidence{Step: want.N, Ran: true, Recorded: want.Outcome, Outcome: want.Outcome})
			}
			verdict, _ := grade.Derive(ev)
			gate := verdict.Kind == grade.Unverified && (strings.HasPrefix(verdict.Reason, "not-reproduced") ||
				strings.HasPrefix(verdict.Reason, "not-replayed") || strings.HasPrefix(verdict.Reason, "contained"))
			if v.Reproduced != tc.want || gate == tc.want {
				t.Errorf("kavach replay reproduced %v (first different %d); kavach diff's old build: %s; want reproduced %v",
					v.Reproduced, v.FirstDifferent, verdict, tc.want)
			}
		})
	}
}
