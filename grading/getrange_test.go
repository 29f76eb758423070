package grading_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/textreport"
)

// getrange records the GETRANGE incident on the old build (a planted
// assertion: GETRANGE greeting -100 -1 kills it) and returns the old
// build and the fixture.
func getrange(t *testing.T) (old, fixture string) {
	t.Helper()
	old = redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...)
	fixture = filepath.Join(t.TempDir(), "getrange.kavach")
	if err := incidents.RecordGetrange(fixture, old); err != nil {
		t.Fatal(err)
	}
	return old, fixture
}

func request(old, new, fixture string) grading.Request {
	return grading.Request{Old: old, New: new, Fixture: fixture, Variants: 64, MinVariants: 10, Seed: 1,
		StepTimeout: 5 * time.Second, StartTimeout: 10 * time.Second}
}

// TestGradeGetrange grades the GETRANGE incident end to end through the
// use case alone, as kavach diff does (this file imports nothing of
// Kavach but grading, textreport, which prints its text, and the test
// helpers that build and record): the build without the planted bug is
// fixed, exit status 0, and the text printed says so on its first line;
// the fix that handles only the incident's exact input fails a variant,
// exit status 1.
func TestGradeGetrange(t *testing.T) {
	old, fixture := getrange(t)
	ctx := context.Background()

	fixed := redisbuild.MustBuild(t)
	rep, err := grading.Grade(ctx, request(old, fixed, fixture))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "fixed" || grading.ExitStatus(rep.Parts.Kind) != 0 {
		t.Fatalf("the build without the bug: verdict %s (exit %d), want fixed (exit 0)", rep.Verdict, grading.ExitStatus(rep.Parts.Kind))
	}
	var out bytes.Buffer
	textreport.Diff(&out, rep, []string{old, fixed, fixture}, "report.json")
	if first, _, _ := strings.Cut(out.String(), "\n"); first != "fixed" {
		t.Errorf("printed %q first, want fixed:\n%s", first, out.String())
	}
	if !strings.Contains(out.String(), "failure at step 5 (crash): old build crash, new build ok") {
		t.Errorf("the checked block does not name the failure:\n%s", out.String())
	}

	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeNarrow)...)
	r := request(old, narrow, fixture)
	r.FailFast = true
	rep, err = grading.Grade(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Verdict, "variant_failed(") || grading.ExitStatus(rep.Parts.Kind) != 1 {
		t.Fatalf("the narrow fix: verdict %s (exit %d), want variant_failed (exit 1)", rep.Verdict, grading.ExitStatus(rep.Parts.Kind))
	}
	if h := textreport.Hint(rep, []string{old, narrow, fixture}, "report.json"); !strings.Contains(h, "fix the cause, not the one input") {
		t.Errorf("the narrow fix's hint:\n%s", h)
	}
}
