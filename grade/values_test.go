package grade_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/invariants"
)

// recordValues records one of the values incidents on old.
func recordValues(t *testing.T, old string, record func(out, old string) error) *fixtures.Fixture {
	t.Helper()
	out := filepath.Join(t.TempDir(), "values.kavach")
	if err := record(out, old); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

// diffBudget is diff with a budget of variants: enough for every value
// variant of the incident, so that what is tested is the mechanism, not
// which variants one seed samples.
func diffBudget(t *testing.T, fx *fixtures.Fixture, old, new string, budget int) *grade.Report {
	t.Helper()
	return diffBudgetWith(t, fx, old, new, budget, nil)
}

// diffBudgetWith is diffBudget with the invariants set (nil: none).
func diffBudgetWith(t *testing.T, fx *fixtures.Fixture, old, new string, budget int, set *invariants.Set) *grade.Report {
	t.Helper()
	c := redis.Integration{}
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
		grade.Options{Integration: c, MinVariants: 10, Variants: budget, Seed: 1, Memo: gradetest.OldReplays, Invariants: set})
	if err != nil {
		t.Fatal(err)
	}
	gradetest.ReadBack(t, rep)
	return rep
}

// checkValues grades the correct fix (fixed, with 10 variants
// reproducing, 3 of them of kind) and the narrow one (red, by variants of
// kind only, each passing only), and that one seed gave both diffs the
// same variants.
func checkValues(t *testing.T, fx *fixtures.Fixture, old, fixed, narrow string, budget int, kind string, only func(grade.VariantEvidence) bool) {
	t.Helper()
	checkKind(t, fx, old, fixed, narrow, budget, kind, 3, only)
}

// checkKind is checkValues with minKind variants of kind reproducing.
func checkKind(t *testing.T, fx *fixtures.Fixture, old, fixed, narrow string, budget int, kind string, minKind int, only func(grade.VariantEvidence) bool) {
	t.Helper()
	rep := diffBudget(t, fx, old, fixed, budget)
	if rep.Verdict != "fixed" || rep.Evidence.Variants.Reproducing < 10 {
		for _, v := range rep.Evidence.Variants.List {
			if v.FailedStep > 0 {
				t.Logf("variant %d (%s): %s\n  old: step %d %s\n  new: step %d %s %+v", v.K, v.Kind, v.Description, v.OldStep, v.OldOutcome, v.FailedStep, v.NewOutcome, v.Diffs)
			}
		}
		t.Fatalf("correct fix: %s with %d variants reproducing, want fixed with 10; findings %+v",
			rep.Verdict, rep.Evidence.Variants.Reproducing, rep.Findings)
	}
	kept := 0
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind == kind && v.Kept {
			kept++
		}
	}
	if kept < minKind {
		t.Errorf("correct fix: %d %s variants reproduce the failure, want %d or more", kept, kind, minKind)
	}

	bad := diffBudget(t, fx, old, narrow, budget)
	if !strings.HasPrefix(bad.Verdict, "variant_failed(") {
		t.Fatalf("narrow fix: %s, want variant_failed; findings %+v", bad.Verdict, bad.Findings)
	}
	for _, v := range bad.Evidence.Variants.List {
		if v.FailedStep > 0 && (v.Kind != kind || !only(v)) {
			t.Errorf("narrow fix: variant %d (%s, %s) failed: another mechanism sees the fault, the test proves nothing", v.K, v.Kind, v.Description)
		}
	}

	describe := func(r *grade.Report) []string {
		var out []string
		for _, v := range r.Evidence.Variants.List {
			out = append(out, v.Kind+" "+v.Description)
		}
		return out
	}
	if a, b := describe(rep), describe(bad); !slices.Equal(a, b) {
		t.Errorf("one seed, two sets of variants:\n%s\n----\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// A fix of INCRBYFLOAT's refusal of negative increments made for the
// incident's integer (-3) only: a fraction or an exponent of the same
// sign is still refused. Only a number in another form sees it, within
// the default budget of 64 variants.
func TestNumberForms(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ValuesOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ValuesNarrow)...)
	fx := recordValues(t, old, incidents.RecordIncrbyFloat)
	if want := "error:ERR negative float increment not allowed"; fx.Failure.Signature != want {
		t.Fatalf("recorded %q, want %q", fx.Failure.Signature, want)
	}
	checkValues(t, fx, old, fixed, narrow, 64, "number-form", func(grade.VariantEvidence) bool { return true })
}

// A fix of XADD's refusal of id parts past 2^63 made for the ms part
// only: an id whose seq part is past 2^63 is still refused. Only the seq
// part, varied alone with the ms part kept, sees it.
func TestStructuredValues(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ValuesOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ValuesNarrow)...)
	fx := recordValues(t, old, incidents.RecordStreamID)
	if !strings.HasPrefix(fx.Failure.Signature, "error:ERR ID part past") {
		t.Fatalf("recorded %q, want the refusal of the id", fx.Failure.Signature)
	}
	checkValues(t, fx, old, fixed, narrow, 200, "structured", func(v grade.VariantEvidence) bool {
		return strings.Contains(v.Description, "seq part")
	})
}
