package grade_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/internal/axumbuild"
	"github.com/kavach-dev/kavach/internal/incidents"
)

// On the HTTP example the budget goes where the failure lives: the
// failing POST /api/v1/items/1/split first, then the earlier requests
// that write what it reads (POST /api/v1/items, the earlier split), then
// the others under its path; GET /health, which cannot affect it, gets
// none. The names in the path are varied, and each earlier request that
// may affect the failure is dropped and delivered twice.
func TestHTTPBudgetWhereTheFailureLives(t *testing.T) {
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
	c := axum.Codec{}
	rep, err := grade.Run(context.Background(), fx, kavach.Launch{Path: old, Args: []string{"--port", "{port}"}},
		kavach.Launch{Path: fixed, Args: []string{"--port", "{port}"}},
		grade.Options{Codec: c, Classifier: c, Normalizer: c, Launcher: axum.Launcher{}, Variants: 64, MinVariants: 10, Seed: 1})
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
		if !v.Regression && strings.Contains(v.Description, "/health") {
			t.Errorf("variant %d (%s) spends budget on GET /health, which cannot affect the failure", v.K, v.Description)
		}
		if !v.Regression && strings.Contains(v.Description, "step 6 ") {
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
