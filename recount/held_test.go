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
	return newReport(grade.Evidence{Failure: kavach.Failure{Step: 1}}, "incident.kavach")
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
