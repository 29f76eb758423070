package recount

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
)

// heldReport is a contract's report whose evidence gives held: the old
// build replays its one step, the new build answers it the same.
func heldReport() *grade.Report {
	step := grade.StepEvidence{Step: 1, Ran: true, Recorded: kavach.Outcome{Kind: "reply"}, Outcome: kavach.Outcome{Kind: "reply"}}
	ev := grade.Evidence{Contract: true,
		Old: grade.OldEvidence{Steps: []grade.StepEvidence{step}},
		New: grade.NewEvidence{Steps: []grade.StepEvidence{step}}}
	return newReport(ev, "contract.kavach")
}

// unverifiedReport is an incident's report whose evidence gives
// unverified: the old build did not replay at all.
func unverifiedReport() *grade.Report {
	return newReport(grade.Evidence{Failure: kavach.Failure{Step: 1, Oracle: kavach.Oracle{Kind: kavach.Crash}, Signature: "crash"}}, "incident.kavach")
}

func newReport(ev grade.Evidence, fixture string) *grade.Report {
	p, _ := grade.Derive(ev)
	return &grade.Report{SchemaVersion: grade.SchemaVersion, Verdict: p.String(), Parts: p,
		Fixture: grade.Fixture{Path: fixture}, Evidence: ev}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func count(r RecountResult, kind string) int {
	for _, c := range r.Counts {
		if c.Kind == kind {
			return c.Count
		}
	}
	return -1
}

// TestHeld: held is a verdict kind, counted, accepted in a summary, and
// green beside hidden tests that pass.
func TestHeld(t *testing.T) {
	if v := heldReport().Verdict; v != grade.Held {
		t.Fatalf("the contract's evidence gives %s, want held", v)
	}
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "contract__a", "verifier", "kavach-report.json"), heldReport())
	if err := os.WriteFile(filepath.Join(dir, "contract__a", "verifier", "reward.txt"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	job, err := Scan(dir)
	if err != nil || len(job.Trials) != 1 {
		t.Fatalf("Scan: %v, %d trials", err, len(job.Trials))
	}
	summary, err := ParseSummary([]byte(`{"held": 1, "total": 1}`))
	if err != nil {
		t.Fatalf("ParseSummary: %v", err)
	}
	r := job.Recount(summary)
	if count(r, grade.Held) != 1 || len(r.NoKind) != 0 || r.Matches == nil || !*r.Matches {
		t.Errorf("Recount = %+v, want held 1, matching the summary", r)
	}
	if c := job.Consistency(); len(c.Inconsistent) != 0 {
		t.Errorf("Consistency: %+v", c.Inconsistent)
	}
	g := job.Graders()
	if len(g.Tasks) != 1 || g.Tasks[0].Agree != 1 || len(g.Tasks[0].Disagree) != 0 || g.Tasks[0].KavachFixed != 1 {
		t.Errorf("Graders = %+v, want held agreeing with passing hidden tests", g.Tasks)
	}
}

// TestSuiteReport: a suite's report is one trial, counted by its
// headline; each fixture's verdict and the headline are re-derived.
func TestSuiteReport(t *testing.T) {
	dir := t.TempDir()
	s := grade.NewSuiteReport([]*grade.Report{heldReport(), unverifiedReport()})
	if s.Parts.Kind != grade.Unverified {
		t.Fatalf("headline %s, want unverified", s.Verdict)
	}
	path := filepath.Join(dir, "suite__a", "verifier", "kavach-report.json")
	writeJSON(t, path, s)
	job, err := Scan(dir)
	if err != nil || len(job.Trials) != 1 || len(job.Unreadable) != 0 {
		t.Fatalf("Scan: %v, %+v, unreadable %+v", err, job.Trials, job.Unreadable)
	}
	if tr := job.Trials[0]; tr.ID != "suite__a" || tr.Task != "suite" || tr.Verdict != s.Verdict || tr.Derived != s.Verdict {
		t.Errorf("trial = %+v, want suite__a, verdict and derived %s", tr, s.Verdict)
	}
	if r := job.Recount(nil); count(r, grade.Unverified) != 1 || r.Total != 1 {
		t.Errorf("Recount = %+v, want 1 unverified", r)
	}
	if c := job.Consistency(); len(c.Consistent) != 1 {
		t.Errorf("Consistency = %+v, want consistent", c)
	}

	// A fixture's verdict edited to fixed: the headline still follows
	// from the evidence, the fixture does not; the trial is inconsistent.
	s.Reports[1].Verdict = grade.Fixed
	writeJSON(t, path, s)
	job, err = Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := job.Consistency()
	if len(c.Inconsistent) != 1 || len(c.Inconsistent[0].Fixtures) != 1 || c.Inconsistent[0].Fixtures[0].Fixture != "incident.kavach" {
		t.Errorf("Consistency = %+v, want the edited fixture named", c)
	}

	// The headline edited to held: inconsistent, and counted as written.
	s.Reports[1].Verdict = s.Verdict
	s.Verdict = grade.Held
	writeJSON(t, path, s)
	if job, err = Scan(dir); err != nil {
		t.Fatal(err)
	}
	if c := job.Consistency(); len(c.Inconsistent) != 1 || c.Inconsistent[0].Derived == grade.Held {
		t.Errorf("Consistency = %+v, want the headline inconsistent", c)
	}
	if r := job.Recount(nil); count(r, grade.Held) != 1 {
		t.Errorf("Recount = %+v, want the headline as written, held", r)
	}
}
