package textreport

import (
	"fmt"
	"io"
	"strings"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
)

// HintIndent indents the lines of a hint after its first.
const HintIndent = "      "

// printHint prints Hint's hint, if there is one, as Diff shows it.
func printHint(w io.Writer, rep *grade.Report, a []string, report string) {
	if h := Hint(rep, a, report); h != "" {
		fmt.Fprintf(w, "hint: %s\n", indent(h, HintIndent))
	}
}

// Hint says what the headline finding, or an unverified verdict,
// means and what to run next; "" when there is nothing to say. a is OLD,
// NEW and FIXTURE as given, report where the report is. Diff prints it after "hint: "; the MCP
// tool returns it as it is.
func Hint(rep *grade.Report, a []string, report string) string {
	ev := rep.Evidence
	fixture := a[2]
	if len(rep.Findings) == 0 {
		if rep.Parts.Kind != grade.Unverified {
			return ""
		}
		if ev.Contract {
			return contractHint(rep, a)
		}
		if strings.HasPrefix(rep.Parts.Reason, "not-evaluable") {
			return "an invariant cannot be evaluated at the failing step, so whether the failure is gone cannot be told.\n" +
				"Guard the expression (has(), != null, a when: clause) for the replies it meets there: docs/invariants.md"
		}
		if strings.HasPrefix(rep.Parts.Reason, "not-reproduced") {
			return fmt.Sprintf("the old build does not fail the way the recording did, so the fix cannot be judged.\n"+
				"Check that OLD is the build the fixture was recorded on: kavach replay %s %s", a[0], fixture)
		}
		if below := ev.Floor.Below(); below != "" && strings.HasPrefix(rep.Parts.Reason, "below-floor") {
			return fmt.Sprintf("every check passed, but with options below the fixture's floor (%s):\n"+
				"only a grade at or above the floor can call it fixed. Grade it again without --below-floor.", below)
		}
		return fmt.Sprintf("every check passed, but only %d variants of the incident fail the old build the recorded way\n"+
			"(%d needed): the evidence is too thin to call it fixed. Record a richer incident, raise --variants,\n"+
			"or lower --min-variants to accept thinner evidence.", ev.Variants.Reproducing, ev.Variants.Min)
	}
	f := rep.Findings[0]
	switch f.Kind {
	case grade.Diverged:
		if ev.Contract {
			return contractHint(rep, a)
		}
		if f.Step > ev.Failure.Step {
			why := "the step touches no state a changed step wrote"
			switch {
			case f.Detail == grade.DetailRefusedAfter:
				why = "it refuses a request the old build answered"
			case f.Rule == grade.RuleObserved:
				why = "the state the step read is the same on both builds, so the answer should be too"
			}
			return fmt.Sprintf("the new build answers step %d, after the failure (step %d), differently from the recording, and\n"+
				"the fix does not explain it (%s). See the step: kavach show %s --step %d",
				f.Step, ev.Failure.Step, why, fixture, f.Step)
		}
		return fmt.Sprintf("the new build answers step %d differently from the recording, before the failure (step %d).\n"+
			"A fix must leave earlier behaviour as it was. See the step: kavach show %s --step %d",
			f.Step, ev.Failure.Step, fixture, f.Step)
	case grade.StillFailing:
		return fmt.Sprintf("the new build still fails at step %d the way the old one did (%s).\n"+
			"Reproduce it alone: kavach replay %s %s", f.Step, ev.Failure.Signature, a[1], fixture)
	case grade.VariantFailed:
		if strings.HasPrefix(f.Detail, "wake-up:") {
			return fmt.Sprintf("the new build answers the blocked request differently from the old build once it is woken\n"+
				"another way (its count or timeout changed, or what woke it dropped, delayed or repeated), where the\n"+
				"old build answered well: a fix must keep that. The variants this diff ran: kavach variants --report %s", report)
		}
		if strings.HasPrefix(f.Detail, "regression:") || len(f.Diffs) > 0 {
			return fmt.Sprintf("the new build changed how it answers an input the old build handled (a mutation of an\n"+
				"earlier step): a fix must keep that behaviour. The variants this diff ran: kavach variants --report %s", report)
		}
		for _, v := range ev.Variants.List {
			if v.K == f.Variant && v.Kind == "sibling" {
				return fmt.Sprintf("the new build passes the recorded incident but fails it made by another command of the same\n"+
					"family, which breaks the old build the same way: the defect lives in that command too. Fix it in\n"+
					"every command that shares it. The variants this diff ran: kavach variants --report %s", report)
			}
		}
		return fmt.Sprintf("the new build passes the recorded incident but fails this variant of it, which still breaks\n"+
			"the old build the same way: fix the cause, not the one input. The variants this diff ran:\n"+
			"kavach variants --report %s", report)
	case grade.InvariantViolated:
		return fmt.Sprintf("the new build gives an answer that a declared invariant forbids (see %s).\n"+
			"Look at the step: kavach show %s --step %d", rep.Options.Invariants, fixture, f.Step)
	}
	return ""
}

// contractHint says what a contract's headline divergence, or its
// unverified verdict, means and what to run next.
func contractHint(rep *grade.Report, a []string) string {
	fixture := a[2]
	if len(rep.Findings) == 0 {
		if strings.HasPrefix(rep.Parts.Reason, "not-replayed") {
			return fmt.Sprintf("the old build does not answer its own recording the way it was recorded, so nothing can be\n"+
				"held against the new build. Check that OLD is the build the contract was recorded on: kavach replay %s %s", a[0], fixture)
		}
		if strings.HasPrefix(rep.Parts.Reason, "below-floor") {
			return "every check passed, but with options below the fixture's floor. Grade it again without --below-floor."
		}
		return fmt.Sprintf("every check passed, but only %d regression variants were handled by the old build (%d needed):\n"+
			"the evidence is too thin to call it held. Record richer traffic, raise --variants, or lower --min-variants.",
			rep.Evidence.Variants.Handled, rep.Evidence.Variants.Min)
	}
	f := rep.Findings[0]
	if f.Outcome.Kind == kavach.Crash || f.Outcome.Kind == kavach.Hang {
		return fmt.Sprintf("the new build %s at step %d, which the recording answered: a contract's traffic must keep working.\n"+
			"Reproduce it alone: kavach replay %s %s", pastTense(f.Outcome.Kind), f.Step, a[1], fixture)
	}
	return fmt.Sprintf("the new build answers step %d differently from the recording: a contract holds every step to it.\n"+
		"See the step: kavach show %s --step %d", f.Step, fixture, f.Step)
}

func pastTense(k kavach.OutcomeKind) string {
	if k == kavach.Crash {
		return "crashed"
	}
	return "hung"
}
