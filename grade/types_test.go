package grade_test

import (
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// A fix made only where the key holds a string: INCRBY on a key of
// another type still refuses the negative increment, where the correct
// fix answers WRONGTYPE. The incident used strings only; only a variant
// that puts a key of another type (written right before) under the
// failing request sees it.
func TestTypeSubstitution(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IncrbyOld)...)
	fixed := redisbuild.MustBuild(t)
	stringsOnly := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IncrbyStringsOnly)...)
	fx := recordIncrby(t, old, "error")

	rep := diff(t, fx, old, fixed, 10)
	if rep.Verdict != "fixed" || rep.Evidence.Variants.Reproducing < 10 {
		t.Fatalf("correct fix: %s with %d variants reproducing, want fixed with 10; findings %+v",
			rep.Verdict, rep.Evidence.Variants.Reproducing, rep.Findings)
	}
	types := map[string]bool{}
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind == "type" && v.Kept {
			types[v.Description[strings.Index(v.Description, "→"):]] = true
		}
	}
	// string, list, set, zset, hash, stream: asked of the build.
	if len(types) < 6 {
		t.Errorf("correct fix: %d kinds of key reproduced the failure (%v), want the build's 6 types", len(types), types)
	}

	rep = diff(t, fx, old, stringsOnly, 10)
	if !strings.HasPrefix(rep.Verdict, "variant_failed(") {
		t.Fatalf("fix for strings only: %s, want variant_failed; findings %+v", rep.Verdict, rep.Findings)
	}
	for _, v := range rep.Evidence.Variants.List {
		if v.FailedStep > 0 && v.Kind != "type" {
			t.Errorf("fix for strings only: variant %d (%s, %s) failed: another mechanism sees the fault, the test proves nothing", v.K, v.Kind, v.Description)
		}
	}
}
