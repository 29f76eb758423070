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
	StatusUnjudged    = "not-judged"    // the failing step of an invariant failure, with no invariants to judge it
	StatusContained   = "contained"     // withheld from a build sharing the machine's network (or its reply known to differ): not compared
)

// The network modes of a trace (Trace.Network): each build in a network
// namespace of its own; or, where the kernel refused one, in the
// machine's network with the integration's dangerous requests withheld
// (contained), or with nothing to withhold (shared). The last two are
// followed by " (namespaces refused: REASON)".
const (
	NetworkIsolated  = "isolated"
	NetworkContained = "contained"
	NetworkShared    = "shared"
)

// StepCheck is one step of a trace judged against the recording.
type StepCheck struct {
	Step     int            `json:"step"`
	Status   string         `json:"status"`
	Recorded kavach.Outcome `json:"recorded_outcome"`
	Outcome  kavach.Outcome `json:"outcome"`
	Diffs    []Diff         `json:"diffs,omitempty"` // differences that count
	Noise    []Diff         `json:"noise,omitempty"` // differences in noise fields
	// Contained says why the step was not compared (StatusContained).
	Contained string `json:"contained,omitempty"`
	// afterFailure marks a step not run after the failing step: shown as
	// not run, but not judged (the replay stops at a hang or a crash).
	afterFailure bool
	// failing marks the failing step: contained, it cannot reproduce.
	failing bool
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
// after the failure are listed but not judged (those the replay did not
// reach, after a hang or a crash, as not run), except that a crash or a
// hang where the recording has neither never reproduces it. The failing
// step of an invariant failure cannot be judged here: it counts against
// the replay (see VerifyInvariant).
func Verify(recorded []StepResult, failure *kavach.Failure, tr *Trace, noise Noise) Verification {
	return VerifyInvariant(recorded, failure, tr, noise, nil)
}

// VerifyInvariant is Verify where violated says whether the failure's
// invariant is violated at a step of the trace, so that an invariant
// failure can be judged reproduced.
func VerifyInvariant(recorded []StepResult, failure *kavach.Failure, tr *Trace, noise Noise, violated func(step int) bool) Verification {
	v := Verification{Reproduced: true}
	for i, want := range recorded {
		var got StepResult
		if i < len(tr.Steps) {
			got = tr.Steps[i]
		}
		v.Add(CheckStep(want, got, failure, noise, violated))
	}
	return v
}

// Add counts c, the next step's check, in the verification and lists it.
func (v *Verification) Add(c StepCheck) {
	v.Count(c)
	v.Steps = append(v.Steps, c)
}

// Count counts c, the next step's check, without listing it: whether the
// replay still reproduces, and where it first did not.
func (v *Verification) Count(c StepCheck) {
	if c.Status == StatusDifferent || c.Status == StatusNotFailed || (c.Status == StatusNotRun && !c.afterFailure) || c.Status == StatusUnjudged ||
		c.Status == StatusContained && c.failing {
		if v.FirstDifferent == 0 {
			v.FirstDifferent = c.Step
		}
		v.Reproduced = false
	}
}

// CheckStep judges one step of a trace, got, against the recording's,
// want, as VerifyInvariant does; got is the zero StepResult for a step the
// trace does not have.
func CheckStep(want, got StepResult, failure *kavach.Failure, noise Noise, violated func(step int) bool) StepCheck {
	c := StepCheck{Step: want.N, Recorded: want.Outcome, Outcome: got.Outcome}
	broke := got.Ran && (got.Outcome.Kind == kavach.Crash || got.Outcome.Kind == kavach.Hang) && got.Outcome.Kind != want.Outcome.Kind
	switch {
	case failure != nil && want.N > failure.Step && broke:
		c.Status = StatusDifferent
		c.Diffs = []Diff{{Step: want.N, Path: "outcome", Want: want.Outcome.String(), Got: got.Outcome.String()}}
	case got.Contained != "":
		// Not compared; the failing step contained does not reproduce
		// (Count): Kavach, not the build, answered it.
		c.Status, c.Contained = StatusContained, got.Contained
		c.failing = failure != nil && want.N == failure.Step
	case failure != nil && want.N > failure.Step && !got.Ran:
		c.Status, c.afterFailure = StatusNotRun, true
	case failure != nil && want.N > failure.Step:
		c.Status = StatusAfterFailed
	case !got.Ran:
		c.Status = StatusNotRun
	case failure != nil && want.N == failure.Step && failure.Oracle.Invariant != "" && violated != nil:
		c.Status = StatusNotFailed
		if violated(want.N) {
			c.Status = StatusReproduced
		}
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
	return c
}
