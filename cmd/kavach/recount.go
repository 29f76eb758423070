package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/htmlreport"
	"github.com/kavach-dev/kavach/internal/pathcheck"
	"github.com/kavach-dev/kavach/recount"
)

func recountCommand() *cli.Command {
	return &cli.Command{
		Name:      "recount",
		Usage:     "count a harness job's verdicts and check each report against its own evidence",
		ArgsUsage: "DIR",
		Description: withExample("Reads every Kavach report under DIR (a harness job: one report per trial; a suite's\n"+
			"report counts as one trial, by its headline) and gives\n"+
			"two answers, apart: the recount, how many reports give each verdict (compared with a\n"+
			"summary's counts with --summary: match or mismatch, with the trials); and self-consistency,\n"+
			"whether each report's verdict follows from its own evidence. Where the hidden tests'\n"+
			"reward (reward.txt, else reward.json) lies beside a report, it also prints the two graders\n"+
			"side by side by task: agree or disagree, never one score. A trial is a report's folder\n"+
			"(less a last 'verifier'); its task, the folder's name up to '__'.\n"+
			"Every trial folder is counted: a report that cannot be read is UNREADABLE, a trial with a\n"+
			"reward and no report INCOMPLETE (both exit 1).\n"+
			"A SWE-bench evaluation archive (one folder per instance with report.json; results/results.json)\n"+
			"gets the same two answers in its own terms: the resolved count against --summary, the\n"+
			"instance ids against --split, and each instance's resolved against its own tests.\n"+
			"Exit 0 when everything matches and is consistent, 1 when not, 2 when DIR cannot be read.",
			"kavach recount jobs/2026-11-30__run --summary jobs/2026-11-30__run/summary.json"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "summary", Usage: "compare the counts with `FILE`: {\"fixed\": N, \"diverged\": N, ..., \"total\": N}; for a SWE-bench archive, its results/results.json"},
			&cli.StringFlag{Name: "split", Usage: "for a SWE-bench archive: reconcile its instance ids with the split's, `FILE` (one id a line, or JSON)"},
			&cli.BoolFlag{Name: "json", Usage: "print the answers as JSON"},
			htmlFlag(),
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			dir, err := oneArg(c, "DIR")
			if err != nil {
				return err
			}
			if c.IsSet("html") {
				if err := checkHTMLOut(c.String("html"), pathcheck.Input{What: "the summary", Path: c.String("summary")}); err != nil {
					return err
				}
			}
			job, arch, err := recount.Open(dir)
			switch {
			case err != nil:
				return err
			case arch != nil:
				return recountSWEBench(c, arch)
			case c.IsSet("split"):
				return usagef("--split reconciles a SWE-bench archive's instance ids; "+dir+" holds Kavach reports",
					"recount: --split: %s is not a SWE-bench archive", dir)
			}
			summary, err := recount.ReadSummary(c.String("summary"))
			if err != nil {
				return err
			}
			if !job.Found() {
				return fmt.Errorf("recount: no Kavach reports under %s (nor SWE-bench instance reports)", dir)
			}
			out := job.Answers(dir, summary, c.String("summary"))
			if err := writeHTML(c, func(w io.Writer) error { return htmlreport.Job(w, job, summary) }); err != nil {
				return err
			}
			if c.Bool("json") {
				if err := out.PrintJSON(c.App.Writer); err != nil {
					return err
				}
			} else {
				out.Print(c.App.Writer)
			}
			if out.Faulty() {
				return &verdictError{code: exitRed}
			}
			return nil
		},
	}
}

// recountSWEBench gives a SWE-bench archive's answers: the recount
// against --summary (results/results.json), the reconciliation with
// --split, and each instance's self-consistency; apart, never merged.
func recountSWEBench(c *cli.Context, arch *recount.SWEArchive) error {
	out, err := arch.ReadAnswers(c.String("summary"), c.String("split"))
	if err != nil {
		return err
	}
	if err := writeHTML(c, func(w io.Writer) error { return htmlreport.SWEBench(w, out) }); err != nil {
		return err
	}
	if c.Bool("json") {
		if err := out.PrintJSON(c.App.Writer); err != nil {
			return err
		}
	} else {
		out.Print(c.App.Writer, arch.Results)
	}
	if len(out.Faults()) > 0 {
		return &verdictError{code: exitRed}
	}
	return nil
}
