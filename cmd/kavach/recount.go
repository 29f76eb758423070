package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

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
			job, err := recount.Scan(dir)
			if err != nil {
				return fmt.Errorf("recount: %w", err)
			}
			arch, err := recount.ScanSWEBench(dir)
			if err != nil {
				return fmt.Errorf("recount: %w", err)
			}
			kavach := len(job.Trials) > 0 || len(job.Unreadable) > 0 || len(job.Incomplete) > 0
			switch {
			case kavach && arch.Found():
				return fmt.Errorf("recount: %s holds both Kavach reports (%d) and SWE-bench instance reports (%d); recount each folder on its own",
					dir, len(job.Trials)+len(job.Unreadable), len(arch.Instances)+len(arch.Unreadable))
			case arch.Found() || (!kavach && len(arch.Unreadable) > 0):
				return recountSWEBench(c, dir, arch)
			case c.IsSet("split"):
				return usagef("--split reconciles a SWE-bench archive's instance ids; "+dir+" holds Kavach reports",
					"recount: --split: %s is not a SWE-bench archive", dir)
			}
			summary, err := readSummary(c.String("summary"))
			if err != nil {
				return err
			}
			if !kavach {
				return fmt.Errorf("recount: no Kavach reports under %s (nor SWE-bench instance reports)", dir)
			}
			out := recountJSON{Dir: dir, Recount: job.Recount(summary), Consistency: job.Consistency(), Unreadable: job.Unreadable, Incomplete: job.Incomplete}
			if out.Unreadable == nil {
				out.Unreadable = []recount.Unreadable{}
			}
			if out.Incomplete == nil {
				out.Incomplete = []recount.Incomplete{}
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
			if (out.Recount.Matches != nil && !*out.Recount.Matches) || len(out.Consistency.Inconsistent) > 0 || len(out.Unreadable) > 0 || len(out.Incomplete) > 0 {
				return &verdictError{code: exitRed}
			}
			return nil
		},
	}
}

// recountSWEBench gives a SWE-bench archive's answers: the recount
// against --summary (results/results.json), the reconciliation with
// --split, and each instance's self-consistency; apart, never merged.
func recountSWEBench(c *cli.Context, dir string, arch *recount.SWEArchive) error {
	var summary *recount.SWESummary
	if file := c.String("summary"); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("read summary: %w", err)
		}
		if summary, err = recount.ParseSWESummary(b); err != nil {
			return fmt.Errorf("summary %s: %w (a SWE-bench archive's summary is its results/results.json)", file, err)
		}
	}
	var split []string
	if file := c.String("split"); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("read split: %w", err)
		}
		if split, err = recount.ParseSplit(b); err != nil {
			return fmt.Errorf("split %s: %w", file, err)
		}
	}
	out := arch.Answers(summary, c.String("summary"), split, c.String("split"))
	if err := writeHTML(c, func(w io.Writer) error { return htmlreport.SWEBench(w, out) }); err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c.App.Writer, out); err != nil {
			return err
		}
	} else {
		printSWEBench(c.App.Writer, out, arch.Results)
	}
	if len(out.Faults()) > 0 {
		return &verdictError{code: exitRed}
	}
	return nil
}

func printSWEBench(w io.Writer, r recount.SWEResult, results string) {
	rc := r.Recount
	fmt.Fprintf(w, "recount: %d SWE-bench instance reports under %s (%d instance folders)\n", rc.Reports, r.Dir, rc.Instances)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	resolved := fmt.Sprintf("  resolved\t%d", rc.Resolved)
	if s := rc.Summary; s != nil {
		switch {
		case s.Match:
			resolved += "\tmatch"
		case s.Resolved == rc.Resolved:
			resolved += "\tMISMATCH: the same count, other instances"
		default:
			resolved += fmt.Sprintf("\tMISMATCH: the summary says %d", s.Resolved)
		}
	}
	fmt.Fprintln(tw, resolved)
	fmt.Fprintf(tw, "  unresolved\t%d\n", rc.Unresolved)
	tw.Flush()
	switch s := rc.Summary; {
	case s == nil && results != "":
		fmt.Fprintf(w, "(the archive's %s was not compared: add --summary %s)\n", results, results)
	case s == nil:
	case s.Match:
		fmt.Fprintf(w, "summary %s: matches\n", s.File)
	default:
		fmt.Fprintf(w, "summary %s: does not match\n", s.File)
		if len(s.NotResolvedHere) > 0 {
			fmt.Fprintf(w, "  listed resolved, not resolved here: %s\n", strings.Join(s.NotResolvedHere, " "))
		}
		if len(s.NotInSummary) > 0 {
			fmt.Fprintf(w, "  resolved here, not listed: %s\n", strings.Join(s.NotInSummary, " "))
		}
	}
	fmt.Fprintln(w)
	if rec := r.Reconciliation; rec == nil {
		fmt.Fprintln(w, "instance ids: not reconciled (no --split)")
	} else {
		mark := "match"
		if !rec.Match {
			mark = "MISMATCH"
		}
		fmt.Fprintf(w, "instance ids against %s (%d ids): %s\n", rec.File, rec.Split, mark)
		for _, l := range []struct {
			what string
			ids  []string
		}{
			{"MISSING (in the split, no instance folder)", rec.Missing},
			{"EXTRA (an instance folder not in the split)", rec.Extra},
			{"accounted for by no_generation", rec.NoGeneration},
			{"accounted for by no_logs", rec.NoLogs},
		} {
			if len(l.ids) > 0 {
				fmt.Fprintf(w, "  %s: %s\n", l.what, strings.Join(l.ids, " "))
			}
		}
	}
	cs := r.Consistency
	fmt.Fprintf(w, "\nself-consistency: %d consistent, %d inconsistent\n", len(cs.Consistent), len(cs.Inconsistent))
	for _, i := range cs.Inconsistent {
		fmt.Fprintf(w, "  INCONSISTENT %s: %s (%s)\n", i.Instance, i.Why(), i.Report)
	}
	for _, l := range r.LogsUnavailable {
		note := "not in the summary's no_logs"
		if l.Accounted {
			note = "listed in the summary's no_logs"
		}
		fmt.Fprintf(w, "logs-unavailable %s: its folder holds no report.json (%s)\n", l.Instance, note)
	}
	for _, u := range r.Unreadable {
		fmt.Fprintf(w, "UNREADABLE %s (instance %s): %s\n", u.Path, u.Instance, u.Reason)
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
	Incomplete  []recount.Incomplete      `json:"incomplete"` // trials with a reward and no report
}

func printRecount(w io.Writer, r recountJSON, summary string) {
	rc := r.Recount
	fmt.Fprintf(w, "recount: %d reports under %s", rc.Total, r.Dir)
	if rc.Trials != rc.Total {
		fmt.Fprintf(w, ", of %d trials (%d UNREADABLE, %d INCOMPLETE)", rc.Trials, len(rc.UnreadableTrials), len(rc.Incomplete))
	}
	fmt.Fprintln(w)
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
		fmt.Fprintln(tw, "TASK\tTRIALS\tHIDDEN PASS\tKAVACH FIXED\tAGREE\tDISAGREE\tNO VERDICT")
		for _, t := range g.Tasks {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", t.Task, t.Trials, t.HiddenPass, t.KavachFixed, t.Agree,
				cmp.Or(strings.Join(t.Disagree, " "), "-"), cmp.Or(strings.Join(t.NoVerdict, " "), "-"))
		}
		tw.Flush()
		if n := len(g.NoHidden); n > 0 {
			fmt.Fprintf(w, "(%d reports without a hidden result beside them: %s)\n", n, strings.Join(g.NoHidden, " "))
		}
	}
	for _, u := range r.Unreadable {
		if u.Trial != "" {
			fmt.Fprintf(w, "UNREADABLE %s (trial %s): %s\n", u.Path, u.Trial, u.Reason)
			continue
		}
		fmt.Fprintf(w, "UNREADABLE %s: %s\n", u.Path, u.Reason)
	}
	for _, in := range r.Incomplete {
		hidden := in.Hidden
		if hidden == "" {
			hidden = "unreadable"
		}
		fmt.Fprintf(w, "INCOMPLETE %s: the hidden tests' reward (%s) and no Kavach report in %s\n", in.Trial, hidden, in.Dir)
	}
}
