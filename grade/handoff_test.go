package grade_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// TestUpgradeSeesDataTheOldBuildWrote: a fault in how a value is written,
// whose correct fix also reads what the old build wrote, and a wrong fix
// that mends only what is written from now on (incidents.Upgrade). Both
// pass every variant replayed from an empty server; the "upgrade"
// variant, where the new build starts from the data the old build left
// before the failing step, fails the wrong fix and no other kind does;
// with "upgrade" excluded the wrong fix is graded fixed again.
func TestUpgradeSeesDataTheOldBuildWrote(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.UpgradeOld)...)
	fixed := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.UpgradeFixConverts)...)
	wrong := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.UpgradeFixWritesOnly)...)
	out := filepath.Join(t.TempDir(), "upgrade.kavach")
	if err := incidents.Record(out, old, incidents.Upgrade); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Failure == nil || fx.Failure.Step != 3 || fx.Failure.Signature != "crash" {
		t.Fatalf("recorded failure %+v, want a crash at step 3", fx.Failure)
	}
	checkKindCatches(t, fx, old, fixed, wrong, 64, "upgrade", nil)

	// The verdict names the fixture's failing step, though the variant's
	// replays count their steps from the hand-off.
	bad := diffBudgetWith(t, fx, old, wrong, 64, nil)
	if !strings.HasPrefix(bad.Verdict, "variant_failed(") || !strings.HasSuffix(bad.Verdict, ")@3") {
		t.Errorf("wrong fix: %s, want variant_failed(K)@3", bad.Verdict)
	}
}
