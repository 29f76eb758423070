package replay

import (
	"sort"

	"github.com/kavach-dev/kavach"
)

// Test-only helpers: whole traces judged at once. kavach replay and kavach
// diff read their replays back step by step (ReadBack) and judge each with
// CheckStep and the noise of Noise.AddStep.

// Verify is CheckStep over a whole trace, with no invariants to judge an
// invariant failure: its failing step counts against the replay.
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

// FindNoise compares the recording with each old-build trace for steps
// 1 to upTo (exclusive; 0 means all) and returns the differing paths.
// Outcome differences are never noise.
func FindNoise(recorded []StepResult, upTo int, traces ...*Trace) Noise {
	n := Noise{}
	for i, want := range recorded {
		if upTo > 0 && want.N >= upTo {
			continue
		}
		var got []StepResult
		for _, tr := range traces {
			if i < len(tr.Steps) {
				got = append(got, tr.Steps[i])
			}
		}
		n.AddStep(want, got...)
	}
	return n
}

// Seen lists the noise as List does, with the values each field took in
// the recording and the traces it was found in.
func (n Noise) Seen(recorded []StepResult, traces ...*Trace) []NoiseField {
	var out []NoiseField
	for _, f := range n.List() {
		if len(out) > 0 && out[len(out)-1].Step == f.Step {
			continue
		}
		k := f.Step - 1
		if k < 0 || k >= len(recorded) {
			continue
		}
		var got []StepResult
		for _, tr := range traces {
			if k < len(tr.Steps) {
				got = append(got, tr.Steps[k])
			} else {
				got = append(got, StepResult{})
			}
		}
		out = append(out, n.SeenStep(recorded[k], got...)...)
	}
	return out
}

// Add counts c, the next step's check, in the verification and lists it.
func (v *Verification) Add(c StepCheck) {
	v.Count(c)
	v.Steps = append(v.Steps, c)
}

// List returns the noise as sorted "step N: PATH" entries.
func (n Noise) List() []NoiseField {
	var out []NoiseField
	for step, paths := range n {
		for p := range paths {
			out = append(out, NoiseField{Step: step, Path: p})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Step != out[j].Step {
			return out[i].Step < out[j].Step
		}
		return out[i].Path < out[j].Path
	})
	return out
}
