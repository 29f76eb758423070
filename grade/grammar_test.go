package grade_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// A fix that lifts SET's refusal of expires only where GET is not given.
// The incident (SET greeting "hello world" EX 100) never used GET; only a
// variant adding the optional flag COMMAND DOCS allows there sees it.
func TestGrammarVariants(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.SetExpireOld)...)
	fixed := redisbuild.MustBuild(t)
	withoutGet := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.SetExpireWithoutGet)...)
	out := filepath.Join(t.TempDir(), "set-expire.kavach")
	if err := incidents.RecordSetExpire(out, old); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "error:ERR expires are not allowed"; fx.Failure.Signature != want {
		t.Fatalf("recorded %q, want %q", fx.Failure.Signature, want)
	}

	rep := diff(t, fx, old, fixed, 10)

	if rep.Verdict != "fixed" || rep.Evidence.Variants.Reproducing < 10 {
		t.Fatalf("correct fix: %s with %d variants reproducing, want fixed with 10; findings %+v",
			rep.Verdict, rep.Evidence.Variants.Reproducing, rep.Findings)
	}
	kept := 0
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind == "grammar" && v.Kept {
			kept++
		}
	}
	if kept < 3 {
		t.Errorf("correct fix: %d grammar variants reproduce the failure, want the other units and the flags", kept)
	}

	rep = diff(t, fx, old, withoutGet, 10)
	if !strings.HasPrefix(rep.Verdict, "variant_failed(") {
		t.Fatalf("fix without GET: %s, want variant_failed; findings %+v", rep.Verdict, rep.Findings)
	}
	for _, v := range rep.Evidence.Variants.List {
		if v.FailedStep > 0 && (v.Kind != "grammar" || !strings.Contains(v.Description, `"GET"`)) {
			t.Errorf("fix without GET: variant %d (%s, %s) failed: another mechanism sees the fault, the test proves nothing", v.K, v.Kind, v.Description)
		}
	}
}
