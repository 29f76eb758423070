package recount

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// losslessJob is a Harbor job of two trials of one task, each a report
// beside its reward: contract__ok (held, hidden pass: agree) and
// contract__bad (unverified, hidden pass: disagree).
func losslessJob(t *testing.T) string {
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "contract__ok", "verifier", "kavach-report.json"), heldReport())
	writeFile(t, filepath.Join(dir, "contract__ok", "verifier", "reward.txt"), "1\n")
	writeJSON(t, filepath.Join(dir, "contract__bad", "verifier", "kavach-report.json"), unverifiedReport())
	writeFile(t, filepath.Join(dir, "contract__bad", "verifier", "reward.txt"), "1\n")
	return dir
}

// TestTruncatedReport: a report cut short is listed, with its trial,
// counted among the trials, and shown in the graders' table as a trial
// with no Kavach verdict; the disagreeing trial never vanishes.
func TestTruncatedReport(t *testing.T) {
	dir := losslessJob(t)
	path := filepath.Join(dir, "contract__bad", "verifier", "kavach-report.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	job, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(job.Unreadable) != 1 || job.Unreadable[0].Path != path || job.Unreadable[0].Trial != "contract__bad" || job.Unreadable[0].Hidden != "pass" {
		t.Fatalf("Unreadable = %+v, want the truncated report of contract__bad, hidden pass", job.Unreadable)
	}
	r := job.Recount(nil)
	if r.Total != 1 || r.Trials != 2 || !slices.Equal(r.UnreadableTrials, []string{"contract__bad"}) {
		t.Errorf("Recount = %+v, want 1 report of 2 trials, contract__bad unreadable", r)
	}
	g := job.Graders()
	if len(g.Tasks) != 1 || g.Tasks[0].Trials != 2 || g.Tasks[0].Agree != 1 || !slices.Equal(g.Tasks[0].NoVerdict, []string{"contract__bad"}) {
		t.Errorf("Graders = %+v, want 2 trials, 1 agreeing, contract__bad with no verdict", g.Tasks)
	}

	// An empty report file, named as Harbor names it: unreadable too.
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if job, err = Scan(dir); err != nil || len(job.Unreadable) != 1 || job.Unreadable[0].Trial != "contract__bad" {
		t.Errorf("Scan of an empty report: %v, %+v", err, job.Unreadable)
	}

	// A broken .json file that does not name itself a report (a Harbor
	// log, say) is left alone.
	writeFile(t, filepath.Join(dir, "contract__ok", "agent", "trajectory.json"), `{"steps": [`)
	if job, err = Scan(dir); err != nil || len(job.Unreadable) != 1 {
		t.Errorf("Scan: %v, unreadable %+v, want the report alone", err, job.Unreadable)
	}
}

// TestIncompleteTrial: a trial with a reward and no report (Kavach timed
// out) is listed as incomplete, counted, and in its task's row.
func TestIncompleteTrial(t *testing.T) {
	dir := losslessJob(t)
	writeFile(t, filepath.Join(dir, "contract__late", "verifier", "reward.json"), `{"reward": 0}`)
	writeFile(t, filepath.Join(dir, "contract__late", "verifier", "test-stdout.txt"), "killed\n")
	job, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Incomplete{{Trial: "contract__late", Task: "contract", Dir: filepath.Join(dir, "contract__late", "verifier"), Hidden: "fail"}}
	if !slices.Equal(job.Incomplete, want) {
		t.Fatalf("Incomplete = %+v, want %+v", job.Incomplete, want)
	}
	if r := job.Recount(nil); r.Trials != 3 || r.Total != 2 || !slices.Equal(r.Incomplete, []string{"contract__late"}) {
		t.Errorf("Recount = %+v, want 2 reports of 3 trials, contract__late incomplete", r)
	}
	g := job.Graders()
	if len(g.Tasks) != 1 || g.Tasks[0].Trials != 3 || !slices.Equal(g.Tasks[0].NoVerdict, []string{"contract__late"}) {
		t.Errorf("Graders = %+v, want contract__late with no verdict", g.Tasks)
	}

	// A report beside the reward: the trial is complete.
	writeJSON(t, filepath.Join(dir, "contract__late", "verifier", "kavach-report.json"), heldReport())
	if job, err = Scan(dir); err != nil || len(job.Incomplete) != 0 || len(job.Trials) != 3 {
		t.Errorf("Scan: %v, incomplete %+v, %d trials; want none incomplete, 3 trials", err, job.Incomplete, len(job.Trials))
	}
}

// TestRewardAsHarborReads: with both reward files, reward.txt is the
// hidden tests' result, as Harbor reads it; reward.json only without it.
func TestRewardAsHarborReads(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "reward.txt"), "0\n")
	writeFile(t, filepath.Join(dir, "reward.json"), `{"reward": 1}`)
	if h, err := hiddenBeside(dir); err != nil || h != "fail" {
		t.Errorf("hiddenBeside with both = %q, %v; want reward.txt's fail", h, err)
	}
	if err := os.Remove(filepath.Join(dir, "reward.txt")); err != nil {
		t.Fatal(err)
	}
	if h, err := hiddenBeside(dir); err != nil || h != "pass" {
		t.Errorf("hiddenBeside with reward.json alone = %q, %v; want pass", h, err)
	}
	writeFile(t, filepath.Join(dir, "reward.txt"), "one\n")
	if _, err := hiddenBeside(dir); err == nil {
		t.Errorf("hiddenBeside with reward.txt %q: no error", "one")
	}
}
