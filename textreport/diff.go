package textreport

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

// Diff prints what an agent needs, in a screenful at most: the
// verdict alone on the first line, the headline finding, a hint, what was
// checked, and where the report is.
func Diff(w io.Writer, rep *grade.Report, a []string, reportPath string) {
	fmt.Fprintln(w, rep.Verdict)
	printDiffBody(w, rep, a, reportPath)
	fmt.Fprintf(w, "report: %s\n", reportPath)
}

// printDiffBody is Diff without its first line (the verdict) and its
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

// Suite prints a suite's verdict: the headline alone on the first
// line, one line per fixture (its verdict, then its path), then what
// kavach diff prints of the headline fixture, and where the report is.
func Suite(w io.Writer, s *grade.SuiteReport, old, new string, fixtures []string, reportPath string) {
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
