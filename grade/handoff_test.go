package grade_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/loadtest"
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
	fx, old, fixed, wrong := upgradeIncident(t)
	checkKindCatches(t, fx, old, fixed, wrong, 64, "upgrade", nil)

	// The verdict names the fixture's failing step, though the variant's
	// replays count their steps from the hand-off.
	bad := diffBudgetWith(t, fx, old, wrong, 64, nil)
	if !strings.HasPrefix(bad.Verdict, "variant_failed(") || !strings.HasSuffix(bad.Verdict, ")@3") {
		t.Errorf("wrong fix: %s, want variant_failed(K)@3", bad.Verdict)
	}
}

// TestUpgradeVerdictUnderLoad grades the upgrade incident's wrong fix and
// its correct fix again and again while stress-ng saturates every core,
// each time from scratch (no memo): the same verdict every time, the
// wrong fix's through the upgrade variant.
func TestUpgradeVerdictUnderLoad(t *testing.T) {
	fx, old, fixed, wrong := upgradeIncident(t)
	defer loadtest.Stress(t)()
	c := redis.Integration{}
	grade1 := func(new string) *grade.Report {
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
			grade.Options{Integration: c, MinVariants: 10, Variants: 64, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	first := ""
	for i := range loadtest.Runs(10) {
		if rep := grade1(fixed); rep.Verdict != "fixed" {
			t.Fatalf("run %d under load: the correct fix %s, want fixed", i+1, rep.Verdict)
		}
		rep := grade1(wrong)
		if first == "" {
			first = rep.Verdict
		}
		if rep.Verdict != first || !strings.HasSuffix(rep.Verdict, ")@3") || !strings.Contains(rep.Findings[0].Detail, "each build starts from the data the old build left") {
			t.Fatalf("run %d under load: the wrong fix %s (finding %+v), want %s through the upgrade variant every time", i+1, rep.Verdict, rep.Findings[0], first)
		}
	}
}

// TestUpgradeNotRunWithoutASavedState: a build whose state cannot be saved
// (a fault planted in the save: the disk is full) leaves the upgrade
// variant not run and not kept, its description saying why, and the rest
// of the grade as it was: the correct fix is still fixed, the wrong one
// (which only the upgrade variant sees) fixed too.
func TestUpgradeNotRunWithoutASavedState(t *testing.T) {
	t.Parallel()
	fx, old, fixed, wrong := upgradeIncident(t)
	c := fullDisk{}
	for _, new := range []string{fixed, wrong} {
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
			grade.Options{Integration: c, MinVariants: 10, Variants: 64, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict != "fixed" {
			t.Errorf("%s: %s, want fixed (the upgrade variant not run)", filepath.Base(filepath.Dir(new)), rep.Verdict)
		}
		var up []grade.VariantEvidence
		for _, v := range rep.Evidence.Variants.List {
			if v.Kind == "upgrade" {
				up = append(up, v)
			}
		}
		if len(up) != 1 || up[0].Kept || !strings.Contains(up[0].Description, "not run: ") || !strings.Contains(up[0].Description, "no space left on device") {
			t.Errorf("upgrade variants %+v, want one, not kept, saying it was not run for the full disk", up)
		}
	}
}

// fullDisk is Redis with a fault planted in saving a build's state.
type fullDisk struct{ redis.Integration }

func (fullDisk) Abilities() kavach.Abilities {
	ab := redis.Integration{}.Abilities()
	ab.SaveData = func(context.Context, string, io.Writer) (int64, error) {
		return 0, syscall.ENOSPC
	}
	return ab
}

// upgradeIncident records the upgrade incident (incidents.Upgrade) on its
// old build, and returns it with the three builds: old, the correct fix
// and the wrong one.
func upgradeIncident(t *testing.T) (fx *fixtures.Fixture, old, fixed, wrong string) {
	t.Helper()
	old = redisbuild.MustBuild(t, incidents.PatchPaths(incidents.UpgradeOld)...)
	fixed = redisbuild.MustBuild(t, incidents.PatchPaths(incidents.UpgradeFixConverts)...)
	wrong = redisbuild.MustBuild(t, incidents.PatchPaths(incidents.UpgradeFixWritesOnly)...)
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
	return fx, old, fixed, wrong
}
