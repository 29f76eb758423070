package htmlreport

import (
	"fmt"
	"io"
	"strings"

	"github.com/kavach-dev/kavach/recount"
)

// jobView is a harness job's recount: the counts, self-consistency and
// the two graders, side by side and never merged into one score.
type jobView struct {
	Dir          string
	Headline     string
	Class        string
	Meaning      string
	Total        int
	Counts       []countRow
	Summary      string // "" without a summary
	Consistent   int
	Inconsistent []recount.Inconsistent
	Graders      *recount.GradersResult
	Unreadable   []recount.Unreadable
	Incomplete   []recount.Incomplete
	Trials       []recount.Trial
}

type countRow struct {
	Kind   string
	Count  int
	Match  string // with a summary: "match" or "MISMATCH: the summary says N"
	Class  string
	Trials string
}

func buildJob(job *recount.Job, summary map[string]int) *jobView {
	rc := job.Recount(summary)
	cs := job.Consistency()
	j := &jobView{Dir: job.Dir, Total: rc.Total, Consistent: len(cs.Consistent), Inconsistent: cs.Inconsistent,
		Unreadable: job.Unreadable, Incomplete: job.Incomplete, Trials: job.Trials}
	for _, c := range rc.Counts {
		r := countRow{Kind: c.Kind, Count: c.Count, Trials: cut(strings.Join(c.Trials, " "), 600)}
		if c.Match != nil {
			r.Match, r.Class = "match", "green"
			if !*c.Match {
				r.Match, r.Class = fmt.Sprintf("MISMATCH: the summary says %d", *c.Summary), "red"
			}
		}
		j.Counts = append(j.Counts, r)
	}
	if rc.Matches != nil {
		j.Summary = "the summary matches the reports"
		if !*rc.Matches {
			j.Summary = "the summary does not match the reports"
			if rc.SummaryTotal != nil && *rc.SummaryTotal != rc.Total {
				j.Summary += fmt.Sprintf(" (total: the summary says %d, there are %d reports)", *rc.SummaryTotal, rc.Total)
			}
		}
	}
	if g := job.Graders(); len(g.Tasks) > 0 {
		j.Graders = &g
	}
	bad := (rc.Matches != nil && !*rc.Matches) || len(cs.Inconsistent) > 0 || len(job.Unreadable) > 0 || len(job.Incomplete) > 0
	j.Headline = fmt.Sprintf("recount: %d reports, %d consistent", rc.Total, len(cs.Consistent))
	if rc.Trials != rc.Total {
		j.Headline += fmt.Sprintf(", of %d trials", rc.Trials)
	}
	j.Class = "green"
	j.Meaning = "Every report's verdict follows from its own evidence"
	if rc.Matches != nil {
		j.Meaning += ", and the summary's counts match the reports'"
	}
	j.Meaning += "."
	if bad {
		j.Class = "red"
		var what []string
		if rc.Matches != nil && !*rc.Matches {
			what = append(what, "the summary's counts do not match the reports'")
		}
		if n := len(cs.Inconsistent); n > 0 {
			what = append(what, fmt.Sprintf("%d reports' verdicts do not follow from their own evidence", n))
		}
		if n := len(job.Unreadable); n > 0 {
			what = append(what, fmt.Sprintf("%d files could not be read", n))
		}
		if n := len(job.Incomplete); n > 0 {
			what = append(what, fmt.Sprintf("%d trials have the hidden tests' reward and no Kavach report", n))
		}
		j.Meaning = "Something does not add up: " + strings.Join(what, "; ") + "."
	}
	if j.Graders != nil {
		j.Meaning += " The hidden tests and Kavach are shown side by side by task; they agree on a trial when the hidden tests pass exactly when Kavach says fixed."
	}
	return j
}

// sweView is a SWE-bench archive's recount: the resolved count against
// the summary, the ids against the split, and each instance's
// self-consistency, apart.
type sweView struct {
	recount.SWEResult
	Match string // the recount against the summary: "match", "MISMATCH: ...", or "" without one
	Class string
}

// SWEBench writes the page of a SWE-bench archive's recount (kavach
// recount DIR on an evaluation archive).
func SWEBench(w io.Writer, r recount.SWEResult) error {
	v := &sweView{SWEResult: r}
	if s := r.Recount.Summary; s != nil {
		v.Match, v.Class = "match", "green"
		if s.Resolved != r.Recount.Resolved {
			v.Match, v.Class = fmt.Sprintf("MISMATCH: the summary says %d", s.Resolved), "red"
		} else if !s.Match {
			v.Match, v.Class = "MISMATCH: the same count, other instances", "red"
		}
	}
	p := &page{Title: "kavach recount: " + r.Dir, SWE: v,
		Verdict:      fmt.Sprintf("recount: %d resolved of %d instance reports, %d consistent", r.Recount.Resolved, r.Recount.Reports, len(r.Consistency.Consistent)),
		VerdictClass: "green", Meaning: "Every instance's resolved follows from its own tests"}
	if r.Recount.Summary != nil {
		p.Meaning += ", the summary's resolved count matches the reports'"
	}
	if r.Reconciliation != nil {
		p.Meaning += ", and every instance of the split is accounted for"
	}
	p.Meaning += ". Nothing here judges whether a patch is correct: these are the archive's own statements, checked against each other."
	if f := r.Faults(); len(f) > 0 {
		p.VerdictClass = "red"
		p.Meaning = "Something does not add up: " + strings.Join(f, "; ") + "."
	}
	return execute(w, p)
}
