package replay

import (
	"github.com/kavach-dev/kavach"
)

// Step statuses in a Verification.
const (
	StatusEqual       = "equal"         // output and outcome as recorded
	StatusNoise       = "noise"         // differs only in noise fields
	StatusDifferent   = "different"     // differs where it counts
	StatusReproduced  = "reproduced"    // the failing step failed the recorded way
	StatusNotFailed   = "not-failed"    // the failing step did not fail the recorded way
	StatusNotRun      = "not-run"       // the replay stopped before this step
	StatusAfterFailed = "after-failure" // after the failing step: shown, not judged
	StatusUnjudged    = "not-judged"    // the failing step of an invariant failure: kavach diff checks invariants
)

// StepCheck is one step of a trace judged against the recording.
type StepCheck struct {
	Step     int            `json:"step"`
	Status   string         `json:"status"`
	Recorded kavach.Outcome `json:"recorded_outcome"`
	Outcome  kavach.Outcome `json:"outcome"`
	Diffs    []Diff         `json:"diffs,omitempty"` // differences that count
	Noise    []Diff         `json:"noise,omitempty"` // differences in noise fields
}

// Verification is a trace judged against the recording.
type Verification struct {
	// Reproduced: every judged step equal (noise aside) and the recorded
	// failure, if any, recurring at its step.
	Reproduced bool        `json:"reproduced"`
	Steps      []StepCheck `json:"steps"`
	// FirstDifferent is the first step that counts against the replay, or 0.
	FirstDifferent int `json:"first_different,omitempty"`
}

// Verify judges a trace against the recording: steps before the failure
// (all steps, when none is marked) must give the recorded output, noise
// aside; the failing step must fail with the recorded signature. Steps
// after the failure are listed but not judged.
func Verify(recorded []StepResult, failure *kavach.Failure, tr *Trace, noise Noise) Verification {
	v := Verification{Reproduced: true}
	for i, want := range recorded {
		c := StepCheck{Step: want.N, Recorded: want.Outcome}
		var got StepResult
		if i < len(tr.Steps) {
			got = tr.Steps[i]
			c.Outcome = got.Outcome
		}
		switch {
		case failure != nil && want.N > failure.Step:
			c.Status = StatusAfterFailed
		case !got.Ran:
			c.Status = StatusNotRun
		case failure != nil && want.N == failure.Step && failure.Oracle.Invariant != "":
			c.Status = StatusUnjudged
		case failure != nil && want.N == failure.Step:
			c.Status = StatusNotFailed
			if failure.Reproduces(got.Outcome) {
				c.Status = StatusReproduced
			}
		default:
			c.Diffs, c.Noise = noise.Split(Compare(want, got))
			switch {
			case len(c.Diffs) > 0:
				c.Status = StatusDifferent
			case len(c.Noise) > 0:
				c.Status = StatusNoise
			default:
				c.Status = StatusEqual
			}
		}
		if c.Status == StatusDifferent || c.Status == StatusNotFailed || c.Status == StatusNotRun {
			if v.FirstDifferent == 0 {
				v.FirstDifferent = c.Step
			}
			v.Reproduced = false
		}
		v.Steps = append(v.Steps, c)
	}
	return v
}
