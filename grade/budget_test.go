package grade_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/internal/axumbuild"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// On the HTTP example the budget goes where the failure lives: the
// failing POST /api/v1/items/1/split first, then the earlier requests
// that write what it reads (POST /api/v1/items, the earlier split), then
// the others under its path; GET /health, which cannot affect it, gets
// none, regression variants included. The names in the path are varied, and each earlier request that
// may affect the failure is dropped and delivered twice.
func TestHTTPBudgetWhereTheFailureLives(t *testing.T) {
	t.Parallel()
	dir := incidents.SplitPatches()
	old := axumbuild.MustBuild(t, filepath.Join(dir, "bug.patch"))
	fixed := axumbuild.MustBuild(t, filepath.Join(dir, "bug.patch"), filepath.Join(dir, "candidates", "correct.patch"))
	out := filepath.Join(t.TempDir(), "split.kavach")
	if err := incidents.RecordSplit(out, old); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	c := axum.Integration{}
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old, Args: []string{"--port", "{port}"}},
		kavach.Launch{Path: fixed, Args: []string{"--port", "{port}"}},
		grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "fixed" {
		t.Fatalf("correct fix: %s; findings %+v", rep.Verdict, rep.Findings)
	}
	places := map[string]int{}
	var names, dropped, twice []string
	for _, v := range rep.Evidence.Variants.List {
		places[v.Place]++
		// Regression variants too: they go where the other earlier-step
		// mutations go.
		if strings.Contains(v.Description, "/health") {
			t.Errorf("variant %d (%s) spends budget on GET /health, which cannot affect the failure", v.K, v.Description)
		}
		if strings.Contains(v.Description, "step 6 ") || strings.HasPrefix(v.Description, "regression: step 6:") {
			t.Errorf("variant %d (%s) mutates step 6 (GET /health)", v.K, v.Description)
		}
		switch {
		case v.Kind == "field" && strings.Contains(v.Description, "path segment") && !strings.Contains(v.Description, "path segment 4"):
			names = append(names, v.Description)
		case v.Kind == "dropped":
			dropped = append(dropped, v.Description)
		case v.Kind == "twice":
			twice = append(twice, v.Description)
		}
	}
	if places["regression"] == 0 {
		t.Errorf("budget spent %v: no regression variant of the steps that may affect the failure", places)
	}
	if places["failing"] <= places["writer"] || places["writer"] == 0 || places["writer"] < places["other"] {
		t.Errorf("budget spent %v: want the failing request first, then the writers, then the others", places)
	}
	if len(names) == 0 || len(dropped) == 0 || len(twice) == 0 {
		t.Errorf("path names varied %q, dropped %q, delivered twice %q: want each", names, dropped, twice)
	}
	if s := rep.Evidence.Variants.Spent(); !strings.HasPrefix(s, "failing request ") || !strings.Contains(s, "writers of its keys ") {
		t.Errorf("the report says the budget went to %q", s)
	}
}

// On Redis, a fix that holds only for the state the incident's writes
// left is graded red by a variant placed where the failure lives: the
// narrow fix of the GETRANGE crash clamps the start only for strings of
// 11 bytes or more, so every variant of the failing request passes (the
// string is 12 bytes, or 11 when the request is moved before the
// APPEND); the SET dropped, or varied to write another key or value,
// leaves a shorter string and the narrow fix crashes. Only a variant of
// a writer of the key, or a dropped or twice-delivered step, may fail it.
// The correct fix stays fixed on the same variants.
func TestRedisBudgetCatchesAStateNarrowFix(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeLongStringsOnly)...)
	out := filepath.Join(t.TempDir(), "getrange.kavach")
	if err := incidents.RecordGetrange(out, old); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep := diffBudget(t, fx, old, fixed, 64); rep.Verdict != "fixed" {
		t.Fatalf("correct fix: %s; findings %+v", rep.Verdict, rep.Findings)
	}
	bad := diffBudget(t, fx, old, narrow, 64)
	if !strings.HasPrefix(bad.Verdict, "variant_failed(") {
		for _, v := range bad.Evidence.Variants.List {
			t.Logf("variant %d (%s, %s, kept %v): %s", v.K, v.Kind, v.Place, v.Kept, v.Description)
		}
		t.Fatalf("narrow fix: %s, want variant_failed; findings %+v", bad.Verdict, bad.Findings)
	}
	var k, n int
	if _, err := fmt.Sscanf(bad.Verdict, "variant_failed(%d)@%d", &k, &n); err != nil {
		t.Fatalf("narrow fix: verdict %q, want variant_failed(K)@N: %v", bad.Verdict, err)
	}
	caught := false
	for _, v := range bad.Evidence.Variants.List {
		if v.FailedStep == 0 {
			continue
		}
		if v.K == k && v.FailedStep != n {
			t.Errorf("verdict %s: variant %d failed at step %d", bad.Verdict, k, v.FailedStep)
		}
		t.Logf("variant %d (%s, %s) failed at step %d: %s", v.K, v.Kind, v.Place, v.FailedStep, v.Description)
		if v.Place != "writer" && v.Kind != "dropped" && v.Kind != "twice" {
			t.Errorf("narrow fix: variant %d (%s, place %s) failed: not the budget's placement that sees it: %s", v.K, v.Kind, v.Place, v.Description)
		}
		caught = caught || v.K == k
	}
	if !caught {
		t.Errorf("narrow fix: verdict %s names no variant that failed", bad.Verdict)
	}
}
