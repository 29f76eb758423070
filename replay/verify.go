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
	StatusForeign     = "foreign"       // a write of another client, applied where the service ran it: not compared
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

// CheckStep judges one step of a build's replay, got, against the
// recording's, want; got is the zero StepResult for a step the replay does
// not have. It is the rule kavach diff holds its old build's first replay
// to before it grades anything (the old build must reproduce the incident,
// or replay its own recording for a contract), with the noise kavach diff
// finds (Noise.AddStep over the old build's replays): steps before the
// failure (every step, when none is marked) must have run with the
// recorded outcome's kind and class and the recorded output, noise
// aside; the failing step must fail the recorded way (its invariant
// violated there, as violated says, for an invariant failure; with
// violated nil it cannot be judged); steps after the failure are listed,
// not judged; a step withheld from the build (contained) is not compared,
// and cannot reproduce a failure marked at it.
func CheckStep(want, got StepResult, failure *kavach.Failure, noise Noise, violated func(step int) bool) StepCheck {
	c := StepCheck{Step: want.N, Recorded: want.Outcome, Outcome: got.Outcome}
	switch {
	case want.Foreign && got.Ran:
		c.Status = StatusForeign
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
