package grading

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/internal/cut"
	"github.com/kavach-dev/kavach/replay"
)

// PrintDiff prints what an agent needs, in a screenful at most: the
// verdict alone on the first line, the headline finding, a hint, what was
// checked, and where the report is.
func PrintDiff(w io.Writer, rep *grade.Report, a []string, reportPath string) {
	fmt.Fprintln(w, rep.Verdict)
	printDiffBody(w, rep, a, reportPath)
	fmt.Fprintf(w, "report: %s\n", reportPath)
}

// printDiffBody is PrintDiff without its first line (the verdict) and its
// last (the report's path).
func printDiffBody(w io.Writer, rep *grade.Report, a []string, reportPath string) {
	if len(rep.Findings) > 0 {
		fmt.Fprintln(w)
		printFinding(w, rep)
		printHint(w, rep, a, reportPath)
		if n := len(rep.Findings) - 1; n > 0 {
			fmt.Fprintf(w, "(+%d more findings in the report)\n", n)
		}
	} else if rep.Parts.Kind == grade.Unverified {
		fmt.Fprintln(w)
		printHint(w, rep, a, reportPath)
	}
	fmt.Fprintln(w)
	ck := rep.Checked()
	if rep.Evidence.Contract {
		printContractChecked(w, rep, ck)
		return
	}
	printChecked(w, rep, ck)
}

// printFinding prints the headline finding: its step or variant, what was
// recorded and what the new build did, and a note when the old build
// itself answered that step two ways.
func printFinding(w io.Writer, rep *grade.Report) {
	ev := rep.Evidence
	f := rep.Findings[0]
	switch f.Kind {
	case grade.Diverged:
		fmt.Fprintf(w, "step %d: %s\n", f.Step, f.Request)
		if f.Step > ev.Failure.Step && f.Detail != "" {
			fmt.Fprintf(w, "  %s\n", indent(cut.Lines(f.Detail, 4), "  "))
		}
		printDiffs(w, f)
	case grade.StillFailing:
		printStillFailing(w, ev, f)
	case grade.VariantFailed:
		fmt.Fprintf(w, "variant %d: %s\n", f.Variant, f.Detail)
		fmt.Fprintf(w, "  old build: %s\n  new build: %s at step %d\n", f.Expected, f.Outcome, f.Step)
		if d := f.Outcome.Detail; d != "" {
			fmt.Fprintf(w, "  %s\n", indent(cut.Lines(d, 4), "  "))
		}
		printDiffs(w, f)
	case grade.InvariantViolated:
		fmt.Fprintf(w, "step %d: invariant %s does not hold\n  %s\n", f.Step, f.Invariant, f.Detail)
		for _, s := range ev.New.Steps {
			if s.Step == f.Step {
				fmt.Fprintf(w, "  request: %s\n", s.Request)
			}
		}
	default:
		fmt.Fprintf(w, "%s: %s\n", f.Kind, f.Detail)
		printDiffs(w, f)
	}
	if f.Variant == 0 {
		for _, nf := range ev.Noise {
			if nf.Step == f.Step && nf.Of > 1 && nf.Differed < nf.Of {
				// The old build itself answered this step two ways.
				fmt.Fprintf(w, "note: on the old build, step %d's %s differed from the recording in %d of %d replays: a timing-dependent answer, left out of the comparison; the finding rests on the rest of the step\n",
					f.Step, nf.Path, nf.Differed, nf.Of)
				break
			}
		}
	}
}

// printStillFailing prints a still_failing finding: the step, the
// recorded signature and what the new build gave.
func printStillFailing(w io.Writer, ev grade.Evidence, f grade.Finding) {
	fmt.Fprintf(w, "step %d: %s\n", f.Step, f.Request)
	got := f.Outcome.String()
	if inv := ev.Failure.Oracle.Invariant; inv != "" && f.Outcome.Kind == kavach.OK {
		// The answer is ok either way: the invariant, violated
		// again, is the failure.
		got = "invariant:" + inv + " (outcome " + got + ")"
		for _, e := range ev.Invariants {
			if e.Name == inv && e.FirstStep == f.Step && e.Message != "" {
				got += "\n  " + indent(cut.Lines(e.Message, 4), "  ")
			}
		}
	}
	fmt.Fprintf(w, "  recorded: %s\n  new:      %s\n", ev.Failure.Signature, got)
	if f.Detail != "" {
		fmt.Fprintf(w, "  %s\n", indent(cut.Lines(f.Detail, 6), "  "))
	}
}

// printChecked prints what an incident's diff checked: the steps before
// and after the failure, the variants, the invariants and the network.
func printChecked(w io.Writer, rep *grade.Report, ck grade.Checked) {
	ev := rep.Evidence
	fmt.Fprintf(w, "checked: %d of %d steps before the failure compared with the recording%s\n", ck.StepsCompared, ck.StepsBeforeFailure, noiseSummary(ev.Noise))
	fmt.Fprintf(w, "         failure at step %d (%s): old build %s, new build %s\n", ck.FailureStep, ck.FailureSignature,
		ck.OldOutcome, ck.NewOutcome)
	if ck.StepsAfterFailure > 0 {
		by := ""
		if len(ck.StepsAfterExplainedBy) > 0 {
			var parts []string
			for _, r := range ck.StepsAfterExplainedBy {
				parts = append(parts, fmt.Sprintf("%s %d", r.Reason, r.Count))
			}
			by = " (" + strings.Join(parts, ", ") + ")"
		}
		rule := ""
		if ck.AfterRule != "" {
			rule = "; judged by " + ck.AfterRule
		}
		fmt.Fprintf(w, "         after the failure: %d of %d steps compared, %d differences explained by the fix%s%s\n",
			ck.StepsAfterCompared, ck.StepsAfterFailure, ck.StepsAfterExplained, by, rule)
	}
	printVariantsChecked(w, ev, ck)
	fmt.Fprintf(w, "         invariants: %d checked on every step, %d held\n", ck.Invariants, ck.InvariantsHeld)
	for _, inv := range ev.Invariants {
		if len(inv.NotEvaluable) > 0 {
			fmt.Fprintf(w, "           %s (on %d steps; no violation there)\n", inv.NotEvaluableMessage, len(inv.NotEvaluable))
		}
		if len(inv.Except) > 0 {
			fmt.Fprintf(w, "           %s: not checked on %s variants\n", inv.Name, strings.Join(inv.Except, ", "))
		}
	}
	printNetwork(w, rep, ck)
}

// printVariantsChecked prints the checked block's variants lines: how
// many were made, kept and passed, and what they were made from.
func printVariantsChecked(w io.Writer, ev grade.Evidence, ck grade.Checked) {
	excluded := ""
	if k := ev.Variants.Excluded; len(k) > 0 {
		excluded = " (kinds excluded by the fixture: " + strings.Join(k, ", ") + ")"
	}
	fmt.Fprintf(w, "         variants: %d generated%s, %d reproduce the failure (need %d); %d regression variants, %d handled by the old build; %d pass on the new build\n",
		ck.VariantsGenerated, excluded, ck.VariantsReproduce, ck.MinVariants, ck.RegressionVariants, ck.RegressionHandled, ck.VariantsPassing)
	if spent := ev.Variants.Spent(); spent != "" {
		fmt.Fprintf(w, "           spent on: %s\n", spent)
	}
	if sl := ev.Variants.Slice; sl != nil {
		fmt.Fprintf(w, "           made from and replayed on the failing step's dependency slice, which the old build fails the recorded way: %s; a long recording (%d equal steps not listed)\n", sl, ev.Omitted)
	}
	if win := ev.Variants.Window; win != "" {
		fmt.Fprintf(w, "           made from and replayed on %s only: a long recording (%d equal steps before them not listed)\n", win, ev.Omitted)
	}
	if why := ev.Variants.SliceFallback; why != "" {
		fmt.Fprintf(w, "           not on the dependency slice: %s\n", why)
	}
	if k := ev.Variants.SkippedSiblings; len(k) > 0 {
		fmt.Fprintf(w, "           sibling commands the old build does not have, not varied: %s\n", strings.Join(k, ", "))
	}
	if line := KindsLine(ev.Variants.ByKind); line != "" {
		fmt.Fprintf(w, "           by kind: %s\n", line)
	}
	if line := StarvedLine(ev.Variants.ByKind, ev.Variants.Excluded); line != "" {
		fmt.Fprintf(w, "           %s\n", line)
	}
	for _, l := range ev.Variants.LeftWhole {
		fmt.Fprintf(w, "           left whole: %s\n", l)
	}
	printCheckpoints(w, ev.Variants.Checkpoints)
}

// printCheckpoints prints how many variant replays started from a
// checkpoint, and why the first checkpoint not used was not.
func printCheckpoints(w io.Writer, cps []grade.CheckpointEvidence) {
	used, replays := []string{}, 0
	unused := -1
	for i, cp := range cps {
		switch {
		case cp.Unused != "" && unused < 0:
			unused = i
		case cp.Unused == "" && cp.Variants > 0:
			replays += cp.Variants
			if s := strconv.Itoa(cp.Step); !slices.Contains(used, s) {
				used = append(used, s)
			}
		}
	}
	if replays > 0 {
		fmt.Fprintf(w, "           %d variant replays started from checkpoints before step %s (each build's saved state, checked)\n", replays, strings.Join(used, ", "))
	}
	if unused >= 0 {
		cp := cps[unused]
		why, _, _ := strings.Cut(cp.Unused, "\n") // the rest is in the report
		fmt.Fprintf(w, "           the %s build's checkpoint before step %d not used: %s\n", cp.Build, cp.Step, why)
	}
}

// printNetwork prints the checked block's network line: how the builds
// were kept off the network, and the steps Kavach answered in their place
// (not compared). A report from before the mode was kept has no line.
func printNetwork(w io.Writer, rep *grade.Report, ck grade.Checked) {
	if rep.Network == "" {
		return
	}
	line := rep.Network
	if n := len(ck.Contained); n > 0 {
		var steps []string
		for i, s := range ck.Contained {
			if i == 8 {
				steps = append(steps, fmt.Sprintf("+%d more", n-8))
				break
			}
			steps = append(steps, strconv.Itoa(s))
		}
		line += fmt.Sprintf("; %d contained (not compared): step %s", n, strings.Join(steps, ", "))
	}
	fmt.Fprintf(w, "         network: %s\n", line)
}

// HintIndent indents the lines of a hint after its first.
const HintIndent = "      "

// printHint prints Hint's hint, if there is one, as PrintDiff shows it.
func printHint(w io.Writer, rep *grade.Report, a []string, report string) {
	if h := Hint(rep, a, report); h != "" {
		fmt.Fprintf(w, "hint: %s\n", indent(h, HintIndent))
	}
}

// Hint says what the headline finding, or an unverified verdict,
// means and what to run next; "" when there is nothing to say. a is OLD,
// NEW and FIXTURE as given, report where the report is. PrintDiff prints it after "hint: "; the MCP
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

// printDiffs shows a finding's differences: against the recording, or,
// for a variant, against the old build's replay of it.
func printDiffs(w io.Writer, f grade.Finding) {
	want := "recorded"
	if f.Kind == grade.VariantFailed {
		want = "old build"
	}
	if f.Kind != grade.VariantFailed && (f.Expected.Kind != f.Outcome.Kind || f.Expected.Class != f.Outcome.Class) {
		fmt.Fprintf(w, "  outcome: recorded %s, new build %s\n", f.Expected, f.Outcome)
	}
	for i, d := range f.Diffs {
		if i == 5 {
			fmt.Fprintf(w, "  (+%d more differences in the report)\n", len(f.Diffs)-5)
			break
		}
		if d.Path == "outcome" {
			continue
		}
		fmt.Fprintf(w, "  %s\n  - %s   (%s)\n  + %s   (new build)\n", d.Path, cut.String(d.Want, 120), want, cut.String(d.Got, 120))
	}
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// noiseSummary is ", N noise fields excluded (step 2 reply[0], ...)", or "".
func noiseSummary(noise []replay.NoiseField) string {
	n := len(noise)
	if n == 0 {
		return ""
	}
	var parts []string
	for i, f := range noise {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("+%d more", n-3))
			break
		}
		parts = append(parts, fmt.Sprintf("step %d %s", f.Step, f.Path))
	}
	return fmt.Sprintf(", %d noise fields excluded (%s)", n, strings.Join(parts, ", "))
}

// printContractChecked prints what a contract's diff checked: every step
// against the recording, the regression variants, the invariants, and
// those the old build does not meet (a feature's).
func printContractChecked(w io.Writer, rep *grade.Report, ck grade.Checked) {
	ev := rep.Evidence
	fmt.Fprintf(w, "checked: contract (no failure): %d of %d steps compared with the recording%s\n", ck.StepsCompared, ck.StepsBeforeFailure, noiseSummary(ev.Noise))
	fmt.Fprintf(w, "         variants: %d regression variants, %d handled by the old build (need %d); %d pass on the new build\n",
		ck.RegressionVariants, ck.RegressionHandled, ck.MinVariants, ck.VariantsPassing)
	fmt.Fprintf(w, "         invariants: %d checked on every step, %d held\n", ck.Invariants, ck.InvariantsHeld)
	for _, u := range ev.OldUnmet {
		fmt.Fprintf(w, "           %s (step %d), so its steps are judged by it, not by the recording\n", grade.OldUnmetNote(u.Name), u.FirstStep)
	}
	printNetwork(w, rep, ck)
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

// PrintSuite prints a suite's verdict: the headline alone on the first
// line, one line per fixture (its verdict, then its path), then what
// kavach diff prints of the headline fixture, and where the report is.
func PrintSuite(w io.Writer, s *grade.SuiteReport, old, new string, fixtures []string, reportPath string) {
	fmt.Fprintln(w, s.Verdict)
	width := 0
	for _, r := range s.Reports {
		width = max(width, len(r.Verdict))
	}
	for i, r := range s.Reports {
		fmt.Fprintf(w, "%-*s  %s\n", width, r.Verdict, fixtures[i])
	}
	if h := s.Headline; h >= 0 {
		fmt.Fprintf(w, "\n%s: %s\n", fixtures[h], s.Reports[h].Verdict)
		printDiffBody(w, s.Reports[h], []string{old, new, fixtures[h]}, reportPath)
	}
	fmt.Fprintf(w, "report: %s (one report per fixture)\n", reportPath)
}

// KindsLine says, per kind of variant, how many reproduced of how many
// ran (a regression kind: how many the old build handled), and how many
// of those the new build failed: "field 9/12, number-form 6/20 (2
// failed), regression 8/8 handled".
func KindsLine(kinds []grade.KindCount) string {
	var parts []string
	for _, k := range kinds {
		if k.Generated == 0 {
			continue // applicable, none generated: StarvedLine
		}
		kept, what := k.Reproduced, ""
		switch {
		case OnlyHandled(k):
			kept, what = k.Handled, " handled"
		case k.Handled > 0: // aggregate: variants of the incident and regression variants
			what = fmt.Sprintf(", %d handled", k.Handled)
		}
		p := fmt.Sprintf("%s %d/%d%s", k.Kind, kept, k.Generated, what)
		if k.Failed > 0 {
			p += fmt.Sprintf(" (%d failed)", k.Failed)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// StarvedLine names the kinds applicable to the incident that got none
// of the budget (excluded ones aside), with how many of each could have
// been made; "" when none.
func StarvedLine(kinds []grade.KindCount, excluded []string) string {
	var parts []string
	for _, k := range grade.Starved(kinds, excluded) {
		parts = append(parts, fmt.Sprintf("%s (%d)", k.Kind, k.Applicable))
	}
	if len(parts) == 0 {
		return ""
	}
	return "applicable, none generated: " + strings.Join(parts, ", ") + ": the budget asked for is smaller than the kinds applicable, each of which gets one first (raise --variants)"
}

// OnlyHandled reports whether k is shown by its handled count alone: a
// kind of regression variants (regression, wakeup), or, as far as the
// counts show, kept only as such. A kind with both (aggregate: variants
// of the incident and regression variants) is shown with both.
func OnlyHandled(k grade.KindCount) bool {
	return k.Reproduced == 0 && (k.Regression || k.Handled > 0)
}
