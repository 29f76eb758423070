package main

import (
	"fmt"
	"github.com/kavach-dev/kavach/internal/pathcheck"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/htmlreport"
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
			"reward (reward.json or reward.txt) lies beside a report, it also prints the two graders\n"+
			"side by side by task: agree or disagree, never one score. A trial is a report's folder\n"+
			"(less a last 'verifier'); its task, the folder's name up to '__'.\n"+
			"Exit 0 when everything matches and is consistent, 1 when not, 2 when DIR cannot be read.",
			"kavach recount jobs/2026-11-30__run --summary jobs/2026-11-30__run/summary.json"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "summary", Usage: "compare the counts with `FILE`: {\"fixed\": N, \"diverged\": N, ..., \"total\": N}"},
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
			var summary map[string]int
			if file := c.String("summary"); file != "" {
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("read summary: %w", err)
				}
				if summary, err = recount.ParseSummary(b); err != nil {
					return fmt.Errorf("summary %s: %w", file, err)
				}
			}
			job, err := recount.Scan(dir)
			if err != nil {
				return fmt.Errorf("recount: %w", err)
			}
			if len(job.Trials) == 0 && len(job.Unreadable) == 0 {
				return fmt.Errorf("recount: no Kavach reports under %s", dir)
			}
			out := recountJSON{Dir: dir, Recount: job.Recount(summary), Consistency: job.Consistency(), Unreadable: job.Unreadable}
			if out.Unreadable == nil {
				out.Unreadable = []recount.Unreadable{}
			}
			if g := job.Graders(); len(g.Tasks) > 0 {
				out.Graders = &g
			}
			if err := writeHTML(c, func(w io.Writer) error { return htmlreport.Job(w, job, summary) }); err != nil {
				return err
			}
			if c.Bool("json") {
				if err := printJSON(c.App.Writer, out); err != nil {
					return err
				}
			} else {
				printRecount(c.App.Writer, out, c.String("summary"))
			}
			if (out.Recount.Matches != nil && !*out.Recount.Matches) || len(out.Consistency.Inconsistent) > 0 || len(out.Unreadable) > 0 {
				return &verdictError{code: exitRed}
			}
			return nil
		},
	}
}

// recountJSON is `kavach recount --json`'s output: the answers side by
// side, none derived from another.
type recountJSON struct {
	Dir         string                    `json:"dir"`
	Recount     recount.RecountResult     `json:"recount"`
	Consistency recount.ConsistencyResult `json:"self_consistency"`
	Graders     *recount.GradersResult    `json:"graders"` // null: no hidden results beside the reports
	Unreadable  []recount.Unreadable      `json:"unreadable"`
}

func printRecount(w io.Writer, r recountJSON, summary string) {
	rc := r.Recount
	fmt.Fprintf(w, "recount: %d reports under %s\n", rc.Total, r.Dir)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range rc.Counts {
		line := fmt.Sprintf("  %s\t%d", c.Kind, c.Count)
		if c.Summary != nil {
			mark := "match"
			if !*c.Match {
				mark = fmt.Sprintf("MISMATCH: the summary says %d", *c.Summary)
			}
			line += "\t" + mark
		}
		if len(c.Trials) > 0 {
			line += "\t" + strings.Join(c.Trials, " ")
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if rc.Matches != nil {
		switch {
		case *rc.Matches:
			fmt.Fprintf(w, "summary %s: matches\n", summary)
		default:
			fmt.Fprintf(w, "summary %s: does not match", summary)
			if rc.SummaryTotal != nil && *rc.SummaryTotal != rc.Total {
				fmt.Fprintf(w, " (total: the summary says %d, there are %d reports)", *rc.SummaryTotal, rc.Total)
			}
			fmt.Fprintln(w)
		}
	}
	cs := r.Consistency
	fmt.Fprintf(w, "\nself-consistency: %d consistent, %d inconsistent\n", len(cs.Consistent), len(cs.Inconsistent))
	for _, i := range cs.Inconsistent {
		fmt.Fprintf(w, "  INCONSISTENT %s: the report says %s, its evidence gives %s (%s)\n", i.Trial, i.Verdict, i.Derived, i.Report)
		for _, f := range i.Fixtures {
			fmt.Fprintf(w, "    fixture %s: the report says %s, its evidence gives %s\n", f.Fixture, f.Verdict, f.Derived)
		}
	}
	if g := r.Graders; g != nil {
		fmt.Fprintf(w, "\ntwo graders, by task (agree: the hidden tests pass exactly when Kavach says fixed or held):\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tTRIALS\tHIDDEN PASS\tKAVACH FIXED\tAGREE\tDISAGREE")
		for _, t := range g.Tasks {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", t.Task, t.Trials, t.HiddenPass, t.KavachFixed, t.Agree, orDash(strings.Join(t.Disagree, " ")))
		}
		tw.Flush()
		if n := len(g.NoHidden); n > 0 {
			fmt.Fprintf(w, "(%d reports without a hidden result beside them: %s)\n", n, strings.Join(g.NoHidden, " "))
		}
	}
	for _, u := range r.Unreadable {
		fmt.Fprintf(w, "UNREADABLE %s: %s\n", u.Path, u.Reason)
	}
}
