package grade_test

import (
	"testing"

	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

func TestZZDebugWriters(t *testing.T) {
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.WritersOld)...)
	wrong := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.WritersWrong)...)
	fx := recordValues(t, old, incidents.RecordFloatReadBack)
	rep := diffBudget(t, fx, old, wrong, 64)
	t.Logf("%s %+v", rep.Verdict, rep.Evidence.Variants.ByKind)
	for _, v := range rep.Evidence.Variants.List {
		t.Logf("%d %s %s kept=%v failed=%d old=%d %v", v.K, v.Kind, v.Description, v.Kept, v.FailedStep, v.OldStep, v.OldOutcome)
	}
}
