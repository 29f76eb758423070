package grade_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// A fix made in one member of a family derived from COMMAND DOCS:
// SINTERSTORE, SUNIONSTORE and SDIFFSTORE share the group "set" and their
// grammar, and no family of the table has them. The old build refuses a
// destination that is also a source in all three; the wrong fix lifts it
// in SINTERSTORE, the incident's command, only. Only a sibling variant
// (the same request by SUNIONSTORE or SDIFFSTORE) sees it; the fix made
// in every member stays fixed.
func TestDerivedFamily(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.SetstoreOld)...)
	fixed := redisbuild.MustBuild(t)
	oneMember := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.SetstoreOneMember)...)
	out := filepath.Join(t.TempDir(), "setstore.kavach")
	if err := incidents.RecordSetstore(out, old); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}

	rep := diff(t, fx, old, fixed, 10)
	if rep.Verdict != "fixed" || rep.Evidence.Variants.Reproducing < 10 {
		t.Fatalf("fix in every member: %s with %d variants reproducing, want fixed with 10; findings %+v",
			rep.Verdict, rep.Evidence.Variants.Reproducing, rep.Findings)
	}
	siblings := map[string]bool{}
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind == "sibling" && v.Kept {
			if !strings.HasSuffix(v.Description, "(derived from COMMAND DOCS group set)") {
				t.Errorf("sibling variant %d not said derived: %s", v.K, v.Description)
			}
			for _, m := range []string{"SUNIONSTORE", "SDIFFSTORE"} {
				if strings.Contains(v.Description, "→ "+m+" tags tags wanted") {
					siblings[m] = true
				}
			}
		}
	}
	if len(siblings) != 2 {
		t.Errorf("fix in every member: sibling variants by %v reproduce the failure, want SUNIONSTORE and SDIFFSTORE", siblings)
	}
	if s := rep.Evidence.Variants.SkippedSiblings; len(s) > 0 {
		t.Errorf("derived members skipped: %v (the build's own COMMAND DOCS named them)", s)
	}

	rep = diff(t, fx, old, oneMember, 10)
	if !strings.HasPrefix(rep.Verdict, "variant_failed(") {
		t.Fatalf("fix in one member: %s, want variant_failed; findings %+v", rep.Verdict, rep.Findings)
	}
	for _, v := range rep.Evidence.Variants.List {
		if v.FailedStep > 0 && v.Kind != "sibling" {
			t.Errorf("fix in one member: variant %d (%s, %s) failed: another mechanism sees the fault, the test proves nothing", v.K, v.Kind, v.Description)
		}
	}
}
