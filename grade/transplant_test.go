package grade_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// excluding is fx with the variant kinds given switched off, as `kavach
// mark --exclude` switches them off.
func excluding(fx *fixtures.Fixture, kinds ...string) *fixtures.Fixture {
	c := *fx
	f := *fx.Failure
	f.ExcludeVariants = kinds
	c.Failure = &f
	return &c
}

// failedKinds are the kinds of the variants the new build failed, and
// logs them.
func failedKinds(t *testing.T, rep *grade.Report) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, v := range rep.Evidence.Variants.List {
		if v.FailedStep > 0 {
			out[v.Kind]++
			t.Logf("variant %d (%s): %s\n  old: step %d %s\n  new: step %d %s", v.K, v.Kind, v.Description, v.OldStep, v.OldOutcome, v.FailedStep, v.NewOutcome)
		}
	}
	return out
}

// keptKind counts the kept variants of kind that the old build failed
// at a step where says.
func keptKind(rep *grade.Report, kind string, where func(step int) bool) int {
	n := 0
	for _, v := range rep.Evidence.Variants.List {
		if v.Kept && v.Kind == kind && where(v.OldStep) {
			n++
		}
	}
	return n
}

// Shape 1 of a shared cause: the integer parser every command shares
// refuses integers past 2^53, and the incident is a script's PEXPIRE of
// a computed 10^16 ms. The wrong fix makes the expiry commands parse
// their integer themselves; the recording's other scripts pass small
// computed numbers to SETEX, INCRBY and LTRIM, which the wrong fix still
// refuses large. Only the failing value transplanted into those scripts'
// arguments (before and after the failure), or the PEXPIRE site made by
// a command of another family with an integer argument, sees it. The
// correct fix (the unpatched build) stays fixed with both kinds on; the
// wrong one is variant_failed by each kind alone and fixed with both off.
func TestTransplant(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.SafeIntegerOld)...)
	fixed := redisbuild.MustBuild(t)
	wrong := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.SafeIntegerExpireOnly)...)
	fx := recordValues(t, old, incidents.RecordSafeInteger)
	if want := "error:ERR integer past the safe range of a script number"; !strings.HasPrefix(fx.Failure.Signature, want) {
		t.Fatalf("recorded %q, want %q", fx.Failure.Signature, want)
	}

	good := diffBudget(t, fx, old, fixed, 64)
	if failedKinds(t, good); good.Verdict != "fixed" {
		t.Fatalf("correct fix: %s, want fixed; findings %+v", good.Verdict, good.Findings)
	}
	if n := keptKind(good, "transplant", func(n int) bool { return n < fx.Failure.Step }); n < 1 {
		t.Errorf("correct fix: %d transplants reproduce at their request before the failure, want 1 or more", n)
	}
	if n := keptKind(good, "transplant", func(n int) bool { return n > fx.Failure.Step }); n < 1 {
		t.Errorf("correct fix: %d transplants reproduce at their request after the failure, want 1 or more", n)
	}
	if n := keptKind(good, "typed-sibling", func(n int) bool { return n > 0 }); n < 1 {
		t.Errorf("correct fix: %d typed siblings reproduce, want 1 or more", n)
	}

	for _, tc := range []struct {
		name    string
		exclude []string
		want    string   // verdict prefix
		by      []string // the kinds allowed to fail
	}{
		{"every kind", nil, "variant_failed(", []string{"transplant", "typed-sibling"}},
		{"transplants only", []string{"typed-sibling"}, "variant_failed(", []string{"transplant"}},
		{"typed siblings only", []string{"transplant"}, "variant_failed(", []string{"typed-sibling"}},
		{"neither", []string{"transplant", "typed-sibling"}, "fixed", nil},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			rep := diffBudget(t, excluding(fx, tc.exclude...), old, wrong, 64)
			kinds := failedKinds(t, rep)
			if !strings.HasPrefix(rep.Verdict, tc.want) {
				t.Fatalf("wrong fix, %s excluded: %s, want %s; findings %+v", tc.exclude, rep.Verdict, tc.want, rep.Findings)
			}
			for k := range kinds {
				if !slices.Contains(tc.by, k) {
					t.Errorf("wrong fix: a %s variant failed: another mechanism sees the fault, the test proves nothing", k)
				}
			}
			for _, k := range tc.by {
				if kinds[k] == 0 {
					t.Errorf("wrong fix: no %s variant failed", k)
				}
			}
			for _, c := range rep.Evidence.Variants.ByKind {
				if slices.Contains(tc.exclude, c.Kind) && c.Generated > 0 {
					t.Errorf("kind %s excluded, yet %d generated", c.Kind, c.Generated)
				}
			}
		})
	}
}
