package htmlreport_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

var regen = flag.Bool("regen", false, "grade the planted faults again with a real kavach diff and rewrite testdata/*.json (then run with -update)")

// TestRegenerateReports rewrites the reports the golden pages are made
// from, each written by a real `kavach diff` of a planted fault against a
// Redis built from source. It runs only with -regen: a grade takes a
// minute, and the goldens must not change with every run's durations.
func TestRegenerateReports(t *testing.T) {
	if !*regen {
		t.Skip("run with -regen to grade the planted faults again and rewrite testdata/*.json")
	}
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...)
	strlen := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenBroken)...)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeNarrow)...)
	incrbyNeg := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IncrbyOld)...)
	strlenOld := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenOld)...)
	strlenShort := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenShortWrong)...)
	pristine := redisbuild.MustBuild(t) // the fix

	dir := t.TempDir()
	kavach := filepath.Join(dir, "kavach")
	if out, err := exec.Command("go", "build", "-o", kavach, "../cmd/kavach").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	getrange := filepath.Join(dir, "getrange.kavach")
	if err := incidents.RecordGetrange(getrange, old); err != nil {
		t.Fatal(err)
	}
	counter := filepath.Join(dir, "counter.kavach")
	if err := incidents.RecordSession(counter, old, [][]string{
		{"SET", "counter", "10"}, {"INCRBY", "counter", "-3"}, {"GET", "counter"}, {"INCRBY", "counter", "5"},
	}); err != nil {
		t.Fatal(err)
	}
	strlenFx := filepath.Join(dir, "strlen.kavach")
	if err := incidents.RecordSession(strlenFx, strlenOld, incidents.Strlen); err != nil {
		t.Fatal(err)
	}
	invariants := filepath.Join(dir, "strlen.invariants")
	if err := os.WriteFile(invariants, []byte(incidents.StrlenInvariants), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(kavach, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if _, red := err.(*exec.ExitError); err != nil && !red {
			t.Fatalf("kavach %v: %v\n%s", args, err, out)
		}
		t.Logf("kavach %v:\n%s", args, out)
	}
	run("mark", "strlen.kavach", "--step", "6", "--oracle", "invariant:strlen-matches", "--invariants", "strlen.invariants")
	// Each report and the grade that writes it: the fix, a fault planted
	// before the failure, a fix too narrow for its variants, a suite with a contract
	// broken beside a fixed incident, and a wrong answer moved after the
	// failure (diverged there, its invariant violated: a second finding).
	for name, args := range map[string][]string{
		"fixed":          {"diff", old, pristine, "getrange.kavach"},
		"diverged":       {"diff", old, strlen, "getrange.kavach"},
		"variant_failed": {"diff", old, narrow, "getrange.kavach"},
		"suite":          {"diff", old, incrbyNeg, "getrange.kavach", "counter.kavach"},
		"diverged_after": {"diff", strlenOld, strlenShort, "strlen.kavach", "--variants", "16", "--min-variants", "1"},
	} {
		out := filepath.Join(dir, name+".json")
		run(append(args, "--out", out)...)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
