package grade_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/internal/axumbuild"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/internal/incidents"
)

// TestHTTPVerdicts grades candidate fixes of a real axum service whose
// split handler panics on parts 0 (the connection closes unanswered).
func TestHTTPVerdicts(t *testing.T) {
	t.Parallel()
	dir := incidents.SplitPatches()
	build := func(patches ...string) string {
		paths := []string{filepath.Join(dir, "bug.patch")}
		for _, p := range patches {
			paths = append(paths, filepath.Join(dir, "candidates", p))
		}
		return axumbuild.MustBuild(t, paths...)
	}
	old := build()
	out := filepath.Join(t.TempDir(), "split.kavach")
	if err := incidents.RecordSplit(out, old); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Failure == nil || fx.Failure.Step != 7 || fx.Failure.Signature != "crash" {
		t.Fatalf("recorded failure %+v, want a crash at step 7", fx.Failure)
	}
	c := axum.Integration{}
	for _, tc := range []struct {
		candidate, want, why string
	}{
		{"correct.patch", "fixed", "parts 0 answers 422"},
		{"narrow.patch", "variant_failed(", "planted fault: only item 1 is handled; variants over the path segment still crash"},
		{"breaks-create.patch", "diverged@1", "planted fault: POST /items answers 200 instead of 201"},
		{"wrong-check.patch", "still_failing@7", "planted fault: the check still lets parts 0 through"},
	} {
		t.Run(tc.candidate, func(t *testing.T) {
			rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old, Args: []string{"--port", "{port}"}},
				kavach.Launch{Path: build(tc.candidate), Args: []string{"--port", "{port}"}},
				grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1, Memo: gradetest.OldReplays})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != tc.want && !(strings.HasSuffix(tc.want, "(") && strings.HasPrefix(rep.Verdict, tc.want)) {
				found, _ := json.MarshalIndent(rep.Findings, "", "  ")
				t.Fatalf("%s (%s): %s; findings %s\nvariants: %+v", tc.candidate, tc.why, rep.Verdict, found, rep.Evidence.Variants)
			}
			if parts, _ := grade.Derive(rep.Evidence); parts.String() != rep.Verdict {
				t.Errorf("evidence gives %s", parts)
			}
			if tc.want == "fixed" {
				kinds := map[string]bool{}
				for _, v := range rep.Evidence.Variants.List {
					for _, k := range []string{"path segment", "body parts", "header User-Agent", "body name"} {
						if strings.Contains(v.Description, k) {
							kinds[k] = true
						}
					}
				}
				if len(kinds) < 3 || rep.Evidence.Variants.Reproducing < 10 {
					t.Errorf("variants over %v, %d reproducing; want path segments, headers and JSON fields, ≥10", kinds, rep.Evidence.Variants.Reproducing)
				}
			}
		})
	}
}
