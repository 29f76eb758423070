package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/htmlreport"
	"github.com/kavach-dev/kavach/mcpserver"
	"github.com/kavach-dev/kavach/replay"
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "grade a new build against an incident or a contract",
		ArgsUsage: "OLD NEW FIXTURE [FIXTURE...]",
		Description: withExample("Replays the fixture on the old build (which must fail the recorded way) and on\n"+
			"the new build, and prints one verdict on the first line: fixed, diverged@N,\n"+
			"still_failing@N, invariant_violated(NAME)@N, variant_failed(K)@N or\n"+
			"unverified(REASON); then the finding (step, request, expected and actual output), a\n"+
			"hint, what was checked, and where the full report is. Both builds start with the\n"+
			"arguments the fixture was recorded with.\n"+
			"A fixture with no failure is a contract: every step must give the recording's answer,\n"+
			"every invariant hold, and regression variants of every step the old build's answers;\n"+
			"the verdict is then held, diverged@N, invariant_violated(NAME)@N, variant_failed(K)@N or\n"+
			"unverified(REASON).\n"+
			"Several fixtures (or a directory of .kavach files) are a suite, graded in one run: the\n"+
			"first line is the suite's verdict (the first red fixture's in argument order, else the\n"+
			"first unverified, else fixed or held), then one line per fixture with its verdict.\n"+
			"Exit status: 0 fixed or held, 1 red, 2 could not grade, 3 unverified (a suite: the worst).",
			"kavach diff ./redis-old ./redis-new incident.kavach --out report.json"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "invariants", Usage: "check the invariants in `FILE` (default: those embedded in the fixture, or FIXTURE's name with .invariants)"},
			&cli.IntFlag{Name: "variants", Value: 64, Usage: "generate at most `N` variants"},
			&cli.IntFlag{Name: "min-variants", Value: 10, Usage: "call it fixed only with at least `M` reproducing variants"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed `S` of the variant generator"},
			&cli.IntFlag{Name: "j", Usage: "run `N` replays at once, across all of a suite's fixtures", DefaultText: jobsDefault},
			&cli.BoolFlag{Name: "json", Usage: "print the full report as JSON on stdout"},
			&cli.StringFlag{Name: "out", Usage: "write the full report to `REPORT` (default: a file in the temporary directory)"},
			&cli.DurationFlag{Name: "step-timeout", Value: 5 * time.Second, Usage: "a step with no reply within `D` hangs"},
			&cli.DurationFlag{Name: "start-timeout", Value: 10 * time.Second, Usage: "a build not ready within `D` cannot be graded"},
			&cli.BoolFlag{Name: "fail-fast", Usage: "stop running variants on the new build after the first it fails"},
			&cli.BoolFlag{Name: "brief", Usage: "print one line: the verdict and the report's path"},
			htmlFlag(),
			trustFlag(),
			&cli.BoolFlag{Name: "below-floor", Usage: "grade with options below the fixture's floor (set with kavach mark): never fixed, at best unverified(below-floor: ...)"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() < 3 {
				return usagef("run 'kavach diff --help' for usage and an example",
					"kavach diff takes 3 argument(s) or more, [OLD NEW FIXTURE...]; got %d", c.NArg())
			}
			a := c.Args().Slice()
			fixtures, suite, err := fixtureArgs(a[2:])
			if err != nil {
				return err
			}
			a = []string{a[0], a[1], fixtures[0]}
			req := diffRequest{Request: mcpserver.Request{
				Old: a[0], New: a[1], Fixture: a[2], Invariants: c.String("invariants"),
				Variants: c.Int("variants"), MinVariants: c.Int("min-variants"), Seed: c.Uint64("seed"), Jobs: c.Int("j"),
				FailFast: c.Bool("fail-fast"), StepTimeout: c.Duration("step-timeout"), StartTimeout: c.Duration("start-timeout"),
				BelowFloor: c.Bool("below-floor"),
			}, TrustLaunch: c.Bool("trust-fixture-launch")}
			if err := checkDiffPaths(req, fixtures, c.String("out")); err != nil {
				return err
			}
			warnSameBuild(c.App.ErrWriter, req.Old, req.New)
			if p, ok := c.App.ErrWriter.(*progressLine); ok {
				req.Progress = p.gradeProgress()
				if suite {
					req.Progress = p.suiteProgress()
				}
			}
			if err := checkOut(c.String("out")); err != nil {
				return err
			}
			if c.IsSet("html") {
				if err := checkHTMLOut(c.String("html"), diffInputs(req, fixtures)...); err != nil {
					return err
				}
				if filepath.Clean(c.String("html")) == filepath.Clean(c.String("out")) {
					return usagef("give the page another name, such as report.html", "--html %s is the report's own path (--out)", c.String("html"))
				}
			}
			if suite {
				return suiteCommand(c, req, fixtures)
			}
			rep, err := runDiff(c.Context, req)
			if err := belowFloorUsage(err, req.Fixture); err != nil {
				return err
			}
			if err != nil {
				return err
			}
			out, err := reportPath(c.String("out"))
			if err != nil {
				return err
			}
			if err := writeReport(out, rep); err != nil {
				return err
			}
			if err := writeHTML(c, func(w io.Writer) error { return htmlreport.Report(w, rep) }); err != nil {
				return err
			}
			if c.Bool("json") {
				// stdout is the report; where it was written goes to stderr.
				fmt.Fprintf(c.App.ErrWriter, "kavach: report: %s\n", out)
				enc := jsonEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else if c.Bool("brief") {
				fmt.Fprintf(c.App.Writer, "%s %s\n", rep.Verdict, out)
			} else {
				printDiff(c.App.Writer, rep, a, out)
			}
			return verdictExit(rep.Parts.Kind)
		},
	}
}

// diffRequest is one grading, as the command line asks for it: the MCP
// tool's request (the same arguments and flags) and what only the command
// line may say.
type diffRequest struct {
	mcpserver.Request
	// TrustLaunch starts the builds with every launch argument the fixture
	// recorded (--trust-fixture-launch); otherwise they pass an allowlist.
	TrustLaunch bool
}

// runDiff grades a new build against a fixture: the one code path of
// `kavach diff` and of the MCP tool.
func runDiff(ctx context.Context, r diffRequest) (*grade.Report, error) {
	d, err := prepareDiff(r)
	if err != nil {
		return nil, err
	}
	return grade.Run(ctx, d.Fixture, d.Old, d.New, d.Options)
}

// prepareDiff checks a request and loads what grading its fixture takes.
func prepareDiff(r diffRequest) (grade.Diff, error) {
	if err := r.check(); err != nil {
		return grade.Diff{}, err
	}
	// A long fixture is graded from its file, its events never all in
	// memory (docs/diff.md, "Long recordings"); a short one is loaded.
	fx, sum, in, err := skimFixture(r.Fixture)
	if err != nil {
		return grade.Diff{}, err
	}
	if sum.Steps <= grade.DefaultLongSteps {
		whole, err := fixtures.Load(r.Fixture)
		if err != nil {
			return grade.Diff{}, err
		}
		fx = whole
	}
	if err := checkLaunch(context.Background(), in, fx, r.TrustLaunch, r.Old, r.New); err != nil {
		return grade.Diff{}, err
	}
	set, err := loadInvariants(r.Invariants, fx)
	if err != nil {
		return grade.Diff{}, err
	}
	ropts := replayOptions(fx, in, r.StepTimeout, r.StartTimeout)
	opts := grade.Options{
		Integration: ropts.Integration,
		StepTimeout: ropts.StepTimeout, Prepare: ropts.Prepare,
		Variants: r.Variants, MinVariants: r.MinVariants, Seed: r.Seed, Jobs: r.Jobs,
		FailFast: r.FailFast, Invariants: set, Progress: r.Progress,
		BelowFloor: r.BelowFloor, StartTimeout: r.StartTimeout,
	}
	if set != nil {
		opts.InvariantsFile = set.File
	}
	if fx.Events == nil {
		opts.Summary = sum // read once: grade.Run does not summarize it again
	}
	return grade.Diff{Fixture: fx, Old: buildLaunch(fx, r.Old), New: buildLaunch(fx, r.New), Options: opts}, nil
}

// jobsDefault is -j's default as help shows it: 0 is as many replays at
// once as the CPUs this process may use (runtime.GOMAXPROCS, which
// follows a container's CPU quota), not the host's cores.
const jobsDefault = "the CPUs kavach may use"

// check refuses numbers that mean nothing: negative counts, timeouts that
// are not positive. Zero variants (none), zero minimum (no evidence
// needed) and zero jobs (one per core) mean something.
func (r diffRequest) check() error {
	for _, n := range []struct {
		flag string
		v    int
	}{{"--variants", r.Variants}, {"--min-variants", r.MinVariants}, {"-j", r.Jobs}} {
		if n.v < 0 {
			return usagef("", "%s %d: need 0 or more", n.flag, n.v)
		}
	}
	return checkTimeouts(map[string]time.Duration{"--step-timeout": r.StepTimeout, "--start-timeout": r.StartTimeout})
}

// warnSameBuild warns, on one line, when OLD and NEW are the same file
// (one SHA-256): the grading goes on (it says still_failing, or
// unverified), but a NEW given by mistake is then plain to see.
func warnSameBuild(w io.Writer, old, new string) {
	a, err := fixtures.SHA256File(old)
	if err != nil {
		return
	}
	if b, err := fixtures.SHA256File(new); err == nil && a == b {
		fmt.Fprintf(w, "kavach: warning: OLD and NEW are the same file (sha256 %.12s): the build is graded against itself (give the candidate fix's build as NEW)\n", a)
	}
}

// checkTimeouts refuses a timeout that is not positive.
func checkTimeouts(timeouts map[string]time.Duration) error {
	for _, flag := range []string{"--step-timeout", "--start-timeout"} {
		if d, ok := timeouts[flag]; ok && d <= 0 {
			return usagef("", "%s %v: need a positive duration, such as 5s", flag, d)
		}
	}
	return nil
}

// checkOut refuses, before grading, a report path that cannot be written
// as a file: an existing directory.
func checkOut(out string) error {
	if st, err := os.Stat(out); out != "" && err == nil && st.IsDir() {
		return usagef("", "--out %s is a directory: give the report's file name, such as %s", out, filepath.Join(out, "report.json"))
	}
	return nil
}

// verdictExit maps a verdict kind to the exit status of docs/design.md §3.
func verdictExit(kind string) error {
	switch {
	case grade.Green(kind):
		return nil
	case kind == grade.Unverified:
		return &verdictError{code: exitUnverified}
	}
	return &verdictError{code: exitRed}
}

// reportPath is where a report goes: out, or a new file in the temporary
// directory when out is "".
func reportPath(out string) (string, error) {
	if out != "" {
		return out, nil
	}
	f, err := os.CreateTemp("", "kavach-report-*.json")
	if err != nil {
		return "", err
	}
	f.Close()
	return f.Name(), nil
}

// belowFloorUsage turns a diff refused below a fixture's floor into a
// usage error saying what to do; any other error is returned as it is.
func belowFloorUsage(err error, fixture string) error {
	var below *grade.BelowFloorError
	if errors.As(err, &below) {
		return usagef("raise --variants or --min-variants, or use the floor's --seed (see 'kavach show "+fixture+"');\n"+
			"--below-floor grades anyway, but then the verdict is never fixed", "%v (set with kavach mark)", err)
	}
	return err
}

// writeReport writes a report (one fixture's, or a suite's) as JSON.
func writeReport(path string, rep any) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// printDiff prints what an agent needs, in a screenful at most: the
// verdict alone on the first line, the headline finding, a hint, what was
// checked, and where the report is.
func printDiff(w io.Writer, rep *grade.Report, a []string, reportPath string) {
	fmt.Fprintln(w, rep.Verdict)
	printDiffBody(w, rep, a, reportPath)
	fmt.Fprintf(w, "report: %s\n", reportPath)
}

// printDiffBody is printDiff without its first line (the verdict) and its
// last (the report's path).
func printDiffBody(w io.Writer, rep *grade.Report, a []string, reportPath string) {
	ev := rep.Evidence
	if len(rep.Findings) > 0 {
		f := rep.Findings[0]
		fmt.Fprintln(w)
		switch f.Kind {
		case grade.Diverged:
			fmt.Fprintf(w, "step %d: %s\n", f.Step, f.Request)
			if f.Step > ev.Failure.Step && f.Detail != "" {
				fmt.Fprintf(w, "  %s\n", indent(cutLines(f.Detail, 4), "  "))
			}
			printDiffs(w, f)
		case grade.StillFailing:
			fmt.Fprintf(w, "step %d: %s\n", f.Step, f.Request)
			got := f.Outcome.String()
			if inv := ev.Failure.Oracle.Invariant; inv != "" && f.Outcome.Kind == kavach.OK {
				// The answer is ok either way: the invariant, violated
				// again, is the failure.
				got = "invariant:" + inv + " (outcome " + got + ")"
				for _, e := range ev.Invariants {
					if e.Name == inv && e.FirstStep == f.Step && e.Message != "" {
						got += "\n  " + indent(cutLines(e.Message, 4), "  ")
					}
				}
			}
			fmt.Fprintf(w, "  recorded: %s\n  new:      %s\n", ev.Failure.Signature, got)
			if f.Detail != "" {
				fmt.Fprintf(w, "  %s\n", indent(cutLines(f.Detail, 6), "  "))
			}
		case grade.VariantFailed:
			fmt.Fprintf(w, "variant %d: %s\n", f.Variant, f.Detail)
			fmt.Fprintf(w, "  old build: %s\n  new build: %s at step %d\n", f.Expected, f.Outcome, f.Step)
			if d := f.Outcome.Detail; d != "" {
				fmt.Fprintf(w, "  %s\n", indent(cutLines(d, 4), "  "))
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
	if ev.Contract {
		printContractChecked(w, rep, ck)
		return
	}
	noise := ""
	if n := len(ev.Noise); n > 0 {
		var parts []string
		for i, f := range ev.Noise {
			if i == 3 {
				parts = append(parts, fmt.Sprintf("+%d more", n-3))
				break
			}
			parts = append(parts, fmt.Sprintf("step %d %s", f.Step, f.Path))
		}
		noise = fmt.Sprintf(", %d noise fields excluded (%s)", n, strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "checked: %d of %d steps before the failure compared with the recording%s\n", ck.StepsCompared, ck.StepsBeforeFailure, noise)
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
	if line := kindsLine(ev.Variants.ByKind); line != "" {
		fmt.Fprintf(w, "           by kind: %s\n", line)
	}
	for _, l := range ev.Variants.LeftWhole {
		fmt.Fprintf(w, "           left whole: %s\n", l)
	}
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

// hintIndent indents the lines of a hint after its first.
const hintIndent = "      "

// printHint prints diffHint's hint, if there is one, as printDiff shows it.
func printHint(w io.Writer, rep *grade.Report, a []string, report string) {
	if h := diffHint(rep, a, report); h != "" {
		fmt.Fprintf(w, "hint: %s\n", indent(h, hintIndent))
	}
}

// diffHint says what the headline finding, or an unverified verdict,
// means and what to run next; "" when there is nothing to say. a is OLD,
// NEW and FIXTURE as given, report where the report is. printDiff prints it after "hint: "; the MCP
// tool returns it as it is.
func diffHint(rep *grade.Report, a []string, report string) string {
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
		fmt.Fprintf(w, "  %s\n  - %s   (%s)\n  + %s   (new build)\n", d.Path, cutString(d.Want, 120), want, cutString(d.Got, 120))
	}
}

func cutLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("(+%d lines in the report)", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// isTerminal reports whether w is a terminal that wants progress drawn:
// never a pipe or file, and not with TERM=dumb.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
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
