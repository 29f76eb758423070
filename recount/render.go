package recount

import (
	"cmp"
	"fmt"
	"github.com/kavach-dev/kavach/internal/jsonout"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// ReadSummary reads a job's summary of counts from file, or nil
// without one ("").
func ReadSummary(file string) (map[string]int, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	summary, err := ParseSummary(b)
	if err != nil {
		return nil, fmt.Errorf("summary %s: %w", file, err)
	}
	return summary, nil
}

// ReadSWESummary reads a SWE-bench archive's summary (its
// results/results.json) from file, or nil without one ("").
func ReadSWESummary(file string) (*SWESummary, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	summary, err := ParseSWESummary(b)
	if err != nil {
		return nil, fmt.Errorf("summary %s: %w (a SWE-bench archive's summary is its results/results.json)", file, err)
	}
	return summary, nil
}

// ReadSplit reads a split's instance ids from file, or nil without one
// ("").
func ReadSplit(file string) ([]string, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read split: %w", err)
	}
	split, err := ParseSplit(b)
	if err != nil {
		return nil, fmt.Errorf("split %s: %w", file, err)
	}
	return split, nil
}

// ReadAnswers is Answers with the summary and the split read from their
// files (ReadSWESummary, ReadSplit; "" for none), as `kavach recount`
// gives them for --summary and --split.
func (a *SWEArchive) ReadAnswers(summaryFile, splitFile string) (SWEResult, error) {
	summary, err := ReadSWESummary(summaryFile)
	if err != nil {
		return SWEResult{}, err
	}
	split, err := ReadSplit(splitFile)
	if err != nil {
		return SWEResult{}, err
	}
	return a.Answers(summary, summaryFile, split, splitFile), nil
}

// PrintJSON prints the archive's answers as `kavach recount --json` does.
func (r SWEResult) PrintJSON(w io.Writer) error { return jsonout.Print(w, r) }

// Print prints the archive's answers as `kavach recount` does; results
// is the archive's own results file, named when it was not compared.
func (r SWEResult) Print(w io.Writer, results string) {
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

// JobAnswers is `kavach recount`'s answers for a harness job of Kavach
// reports, side by side, none derived from another.
type JobAnswers struct {
	Dir         string            `json:"dir"`
	Recount     RecountResult     `json:"recount"`
	Consistency ConsistencyResult `json:"self_consistency"`
	Graders     *GradersResult    `json:"graders"` // null: no hidden results beside the reports
	Unreadable  []Unreadable      `json:"unreadable"`
	Incomplete  []Incomplete      `json:"incomplete"` // trials with a reward and no report
	// SummaryFile is the summary the counts were compared with ("": none).
	SummaryFile string `json:"-"`
}

// Answers gives the job's answers: the recount against summary (nil:
// none; read from summaryFile), self-consistency and, where hidden
// results lie beside the reports, the two graders by task.
func (j *Job) Answers(dir string, summary map[string]int, summaryFile string) JobAnswers {
	out := JobAnswers{Dir: dir, Recount: j.Recount(summary), Consistency: j.Consistency(), Unreadable: j.Unreadable, Incomplete: j.Incomplete, SummaryFile: summaryFile}
	if out.Unreadable == nil {
		out.Unreadable = []Unreadable{}
	}
	if out.Incomplete == nil {
		out.Incomplete = []Incomplete{}
	}
	if g := j.Graders(); len(g.Tasks) > 0 {
		out.Graders = &g
	}
	return out
}

// Faulty says whether anything does not add up: a count against the
// summary, a report against its own evidence, a trial unread or
// incomplete.
func (r JobAnswers) Faulty() bool {
	return (r.Recount.Matches != nil && !*r.Recount.Matches) || len(r.Consistency.Inconsistent) > 0 || len(r.Unreadable) > 0 || len(r.Incomplete) > 0
}

// PrintJSON prints the job's answers as `kavach recount --json` does.
func (r JobAnswers) PrintJSON(w io.Writer) error { return jsonout.Print(w, r) }

// Print prints the job's answers as `kavach recount` does.
func (r JobAnswers) Print(w io.Writer) {
	summary := r.SummaryFile
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
