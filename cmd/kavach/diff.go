package main

import (
	"errors"
	"fmt"
	"github.com/kavach-dev/kavach/internal/jsonout"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/htmlreport"
	"github.com/kavach-dev/kavach/internal/progress"
	"github.com/kavach-dev/kavach/textreport"
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
			&cli.IntFlag{Name: "variants", Value: 64, Usage: "generate at most `N` variants (the default 64 grows by one per kind and cause, to 128)"},
			&cli.IntFlag{Name: "min-variants", Value: 10, Usage: "call it fixed only with at least `M` reproducing variants"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed `S` of the variant generator"},
			&cli.IntFlag{Name: "j", Usage: "run `N` replays at once, across all of a suite's fixtures", DefaultText: jobsDefault},
			&cli.BoolFlag{Name: "json", Usage: "print the full report as JSON on stdout"},
			&cli.StringFlag{Name: "out", Usage: "write the full report to `REPORT` (default: a file in the temporary directory)"},
			&cli.DurationFlag{Name: "step-timeout", Value: 5 * time.Second, Usage: "a step with no reply within `D` hangs"},
			&cli.DurationFlag{Name: "start-timeout", Value: 10 * time.Second, Usage: "a build not ready within `D` cannot be graded"},
			&cli.BoolFlag{Name: "fail-fast", Usage: "stop running variants on the new build after the first it fails"},
			&cli.BoolFlag{Name: "checkpoints", Value: true, Usage: "start variants from each build's saved state before the step they change (=false: replay every step; the same variants)"},
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
			fixtures, suite, err := grading.FixtureArgs(a[2:])
			if err != nil {
				return err
			}
			a = []string{a[0], a[1], fixtures[0]}
			req := grading.Request{
				Old: a[0], New: a[1], Fixture: a[2], Invariants: c.String("invariants"),
				Variants: c.Int("variants"), MinVariants: c.Int("min-variants"), Seed: c.Uint64("seed"), Jobs: c.Int("j"),
				FailFast: c.Bool("fail-fast"), StepTimeout: c.Duration("step-timeout"), StartTimeout: c.Duration("start-timeout"),
				BelowFloor: c.Bool("below-floor"), TrustLaunch: c.Bool("trust-fixture-launch"),
				NoCheckpoints: !c.Bool("checkpoints"), Warn: warnTo(c.App.ErrWriter),
			}
			if req.Opened, err = req.CheckPaths(fixtures, suite, "--out", c.String("out")); err != nil {
				return err
			}
			warnSameBuild(c.App.ErrWriter, req.Old, req.New)
			if p, ok := c.App.ErrWriter.(*progress.Line); ok {
				req.Progress = p.GradeProgress()
				if suite {
					req.Progress = p.SuiteProgress()
				}
			}
			if err := checkOut(c.String("out")); err != nil {
				return err
			}
			if c.IsSet("html") {
				if err := checkHTMLOut(c.String("html"), req.Inputs(fixtures)...); err != nil {
					return err
				}
				if filepath.Clean(c.String("html")) == filepath.Clean(c.String("out")) {
					return usagef("give the page another name, such as report.html", "--html %s is the report's own path (--out)", c.String("html"))
				}
			}
			if suite {
				return suiteCommand(c, req, fixtures)
			}
			rep, err := grading.Grade(c.Context, req)
			if err := belowFloorUsage(err, req.Fixture); err != nil {
				return err
			}
			if err != nil {
				return err
			}
			return diffOutput(c, rep, a)
		},
	}
}

// diffOutput writes a diff's report (and page), prints it as the flags
// ask, and exits with its verdict's status. a is OLD, NEW and FIXTURE.
func diffOutput(c *cli.Context, rep *grade.Report, a []string) error {
	out, err := grading.ReportPath(c.String("out"))
	if err != nil {
		return err
	}
	if err := grading.WriteReport(out, rep); err != nil {
		return err
	}
	if err := writeHTML(c, func(w io.Writer) error { return htmlreport.Report(w, rep) }); err != nil {
		return err
	}
	if c.Bool("json") {
		// stdout is the report; where it was written goes to stderr.
		fmt.Fprintf(c.App.ErrWriter, "kavach: report: %s\n", out)
		if err := jsonout.Print(c.App.Writer, rep); err != nil {
			return err
		}
	} else if c.Bool("brief") {
		fmt.Fprintf(c.App.Writer, "%s %s\n", rep.Verdict, out)
	} else {
		textreport.Diff(c.App.Writer, rep, a, out)
	}
	return verdictExit(rep.Parts.Kind)
}

// jobsDefault is -j's default as help shows it: 0 is as many replays at
// once as the CPUs this process may use (runtime.GOMAXPROCS, which
// follows a container's CPU quota), not the host's cores.
const jobsDefault = "the CPUs kavach may use"

// warnSameBuild warns, on one line, when OLD and NEW are the same file
// (one SHA-256): the grading goes on (it says still_failing, or
// unverified), but a NEW given by mistake is then plain to see.
func warnSameBuild(w io.Writer, old, new string) {
	if a, same := grading.SameBuild(old, new); same {
		fmt.Fprintf(w, "kavach: warning: OLD and NEW are the same file (sha256 %.12s): the build is graded against itself (give the candidate fix's build as NEW)\n", a)
	}
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
	if code := grading.ExitStatus(kind); code != grading.ExitGreen {
		return &verdictError{code: code}
	}
	return nil
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

// trustFlag is --trust-fixture-launch, on the commands that start builds
// with a fixture's launch arguments.
func trustFlag() cli.Flag {
	return &cli.BoolFlag{Name: "trust-fixture-launch", Usage: "start builds with every launch argument the fixture recorded (by default only those that change the behaviour under test; Kavach's loopback, directory and persistence settings still win)"}
}
