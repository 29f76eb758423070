package grade_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
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

// checkValues grades the correct fix (fixed, with 10 variants
// reproducing, kind of them) and the narrow one (red, by variants of kind
// only, each passing only), and that one seed gave both diffs the same
// variants.
func checkValues(t *testing.T, fx *fixtures.Fixture, old, fixed, narrow, kind string, only func(grade.VariantEvidence) bool) {
	t.Helper()
	rep := diff(t, fx, old, fixed, 10)
	if rep.Verdict != "fixed" || rep.Evidence.Variants.Reproducing < 10 {
		t.Fatalf("correct fix: %s with %d variants reproducing, want fixed with 10; findings %+v",
			rep.Verdict, rep.Evidence.Variants.Reproducing, rep.Findings)
	}
	kept := 0
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind == kind && v.Kept {
			kept++
		}
	}
	if kept < 3 {
		t.Errorf("correct fix: %d %s variants reproduce the failure, want 3 or more", kept, kind)
	}

	bad := diff(t, fx, old, narrow, 10)
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
// sign is still refused. Only a number in another form sees it.
func TestNumberForms(t *testing.T) {
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ValuesOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ValuesNarrow)...)
	fx := recordValues(t, old, incidents.RecordIncrbyFloat)
	if want := "error:ERR negative float increment not allowed"; fx.Failure.Signature != want {
		t.Fatalf("recorded %q, want %q", fx.Failure.Signature, want)
	}
	checkValues(t, fx, old, fixed, narrow, "number-form", func(grade.VariantEvidence) bool { return true })
}

// A fix of XADD's refusal of id parts past 2^63 made for the ms part
// only: an id whose seq part is past 2^63 is still refused. Only the seq
// part, varied alone with the ms part kept, sees it.
func TestStructuredValues(t *testing.T) {
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ValuesOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ValuesNarrow)...)
	fx := recordValues(t, old, incidents.RecordStreamID)
	if !strings.HasPrefix(fx.Failure.Signature, "error:ERR ID part past") {
		t.Fatalf("recorded %q, want the refusal of the id", fx.Failure.Signature)
	}
	checkValues(t, fx, old, fixed, narrow, "structured", func(v grade.VariantEvidence) bool {
		return strings.Contains(v.Description, "seq part")
	})
}
