package grade

import (
	"fmt"

	"github.com/kavach-dev/kavach"
)

// deriveContract derives a contract's verdict (a fixture with no failure,
// docs/contracts.md) from evidence alone: unverified(not-replayed: ...)
// when the old build does not replay its own recording; else findings on
// the fixture's own replay, the earliest by step — a crash or a hang the
// recording did not show, a step the new build did not reach, a declared
// invariant violated, a difference from the recording (noise excluded) —
// at one step the invariant first, as it names what is wrong; else the
// failing regression variant with the lowest K; else unverified when fewer
// than the minimum regression variants are handled by the old build, or
// when graded below the fixture's floor; else held.
//
// A step where the old build's replay violates an invariant (a feature's
// invariant, which the old build is expected not to meet) is not compared
// with the recording: the feature may rightly change its answer, and the
// invariant decides it instead.
func deriveContract(ev Evidence) (Verdict, []Finding) {
	if reason := notReplayed(ev); reason != "" {
		return Verdict{Kind: Unverified, Reason: "not-replayed: " + reason}, nil
	}
	noise := noiseOf(ev)
	oldViolated := map[int]bool{}
	for _, s := range ev.Old.Steps {
		oldViolated[s.Step] = len(s.Violated) > 0
	}
	var findings []Finding
	for _, s := range ev.New.Steps {
		if !s.Ran {
			// The replay stopped early without a broken step to show
			// for it (a crash is the broken step's finding).
			if len(findings) == 0 || findings[len(findings)-1].Kind != Diverged || !broken(findings[len(findings)-1].Outcome) {
				findings = append(findings, Finding{Verdict: Verdict{Kind: Diverged, Step: s.Step}, Request: s.Request, Expected: s.Recorded,
					Outcome: kavach.Outcome{Kind: "not-run"}, Detail: "the new build's replay stopped before this step: " + ev.New.Stopped})
			}
			break
		}
		if s.Contained != "" {
			continue // not compared: Kavach answered it, or its reply was known to differ
		}
		if broken(s.Outcome) && s.Outcome.Kind != s.Recorded.Kind {
			findings = append(findings, Finding{Verdict: Verdict{Kind: Diverged, Step: s.Step}, Request: s.Request, Expected: s.Recorded,
				Outcome: s.Outcome, Detail: fmt.Sprintf("the new build gave %s where the recording did not: %s", s.Outcome.Kind, s.Outcome.Detail)})
			continue
		}
		if oldViolated[s.Step] {
			continue
		}
		if counted, _ := noise.Split(s.Diffs); len(counted) > 0 {
			findings = append(findings, Finding{Verdict: Verdict{Kind: Diverged, Step: s.Step}, Request: s.Request,
				Expected: s.Recorded, Outcome: s.Outcome, Diffs: counted, Detail: s.Outcome.Detail})
		}
	}
	for _, inv := range ev.Invariants {
		if !inv.Held {
			findings = append(findings, Finding{Verdict: Verdict{Kind: InvariantViolated, Step: inv.FirstStep, Invariant: inv.Name}, Detail: inv.Message,
				Outcome: outcomeAt(ev.New.Steps, inv.FirstStep)})
		}
	}
	order := map[string]int{InvariantViolated: 0, Diverged: 1}
	sortFindings(findings, func(a, b Finding) bool {
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		return order[a.Kind] < order[b.Kind]
	})
	findings = append(findings, variantFindings(ev)...)
	if len(findings) > 0 {
		return findings[0].Verdict, findings
	}
	if v := ev.Variants; v.Handled < v.Min {
		return Verdict{Kind: Unverified, Reason: fmt.Sprintf("variants: %d of %d regression variants handled by the old build, need %d", v.Handled, v.Regression, v.Min)}, findings
	}
	if below := ev.Floor.Below(); below != "" {
		return Verdict{Kind: Unverified, Reason: reasonBelowFloor + ": " + below}, findings
	}
	return Verdict{Kind: Held}, findings
}

// broken reports whether an outcome is a crash or a hang.
func broken(o kavach.Outcome) bool { return o.Kind == kavach.Crash || o.Kind == kavach.Hang }

// notReplayed says why the old build's replay does not replay its own
// recording, or "" if it does: every step run, each with the recorded
// outcome's kind and class (the rest of each output may differ: that is
// noise, learned from these very replays).
func notReplayed(ev Evidence) string {
	for _, s := range ev.Old.Steps {
		switch {
		case !s.Ran:
			return fmt.Sprintf("the old build's replay stopped before step %d: %s", s.Step, ev.Old.Stopped)
		case s.Contained != "":
			// not compared
		case s.Outcome.Kind != s.Recorded.Kind || s.Outcome.Class != s.Recorded.Class:
			return fmt.Sprintf("step %d gave %s on the old build, recorded %s", s.Step, s.Outcome, s.Recorded)
		}
	}
	if len(ev.Old.Steps)+ev.Omitted == 0 {
		return "the old build's replay has no steps"
	}
	return ""
}

// OldUnmetNote is what a contract's report says of an invariant the old
// build does not meet.
func OldUnmetNote(name string) string {
	return fmt.Sprintf("the old build does not meet %s: expected for a feature", name)
}
