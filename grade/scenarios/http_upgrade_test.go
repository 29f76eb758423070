package scenarios_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/internal/axumbuild"
	"github.com/kavach-dev/kavach/internal/incidents"
)

// TestHTTPUpgradeSeesDataTheOldBuildWrote: the upgrade shape on an HTTP
// service whose state is a directory (recorded with --state-dir, started
// empty). The old build stores a new item's quantity zero-based, and
// reading an item of one unit divides by zero (quantity-zero-based.patch:
// POST, then GET of the item crashes). The correct fix stores counts and
// converts what the old build wrote when it loads the state file; the
// wrong fix only stores counts from now on. Replayed from the start, both
// pass every step: the new build wrote the item itself. The "upgrade"
// variant starts the new build from the state directory the old build
// left after the POST: the correct fix is fixed, the wrong fix
// variant_failed through it and no other kind, and with "upgrade"
// excluded the wrong fix is graded fixed.
func TestHTTPUpgradeSeesDataTheOldBuildWrote(t *testing.T) {
	t.Parallel()
	bug := axumbuild.MustPatch(t, "quantity-zero-based.patch")
	old := axumbuild.MustBuild(t, bug)
	correct := axumbuild.MustBuild(t, bug, axumbuild.MustPatch(t, "quantity-fix.patch"))
	wrong := axumbuild.MustBuild(t, bug, axumbuild.MustPatch(t, "quantity-fix-new-only.patch"))

	out := filepath.Join(t.TempDir(), "upgrade.kavach")
	recordWithStateDir(t, out, old, t.TempDir(), []incidents.HTTPRequest{
		{Conn: 1, Method: "POST", Path: "/api/v1/items", Body: `{"name":"lamp","price_cents":1999,"quantity":1}`},
		{Conn: 1, Method: "GET", Path: "/api/v1/items/1"},
	})
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Failure == nil || fx.Failure.Step != 2 || fx.Failure.Signature != "crash" {
		t.Fatalf("recorded failure %+v, want the GET's crash at step 2", fx.Failure)
	}
	c := axum.Integration{}
	args := fx.Header.Launch.Args
	grade1 := func(fx *fixtures.Fixture, new string) *grade.Report {
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old, Args: args},
			kavach.Launch{Path: new, Args: args}, grade.Options{Integration: c, Variants: 64, MinVariants: 3, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	upgrade := func(rep *grade.Report) *grade.VariantEvidence {
		for i, v := range rep.Evidence.Variants.List {
			if v.Kind == "upgrade" {
				return &rep.Evidence.Variants.List[i]
			}
		}
		return nil
	}

	rep := grade1(fx, correct)
	if rep.Verdict != "fixed" {
		t.Fatalf("correct fix: %s, want fixed; findings %+v", rep.Verdict, rep.Findings)
	}
	if v := upgrade(rep); v == nil || !v.Kept || v.FailedStep != 0 {
		t.Fatalf("correct fix: upgrade variant %+v, want one, kept (the old build from its own state crashes) and passed", v)
	}

	rep = grade1(fx, wrong)
	if !strings.HasPrefix(rep.Verdict, "variant_failed(") || !strings.HasSuffix(rep.Verdict, ")@2") {
		t.Fatalf("wrong fix: %s, want variant_failed(K)@2; findings %+v", rep.Verdict, rep.Findings)
	}
	for _, v := range rep.Evidence.Variants.List {
		if v.FailedStep > 0 && v.Kind != "upgrade" {
			t.Errorf("wrong fix: variant %d (%s, %s) failed: another kind sees the fault, the test proves nothing", v.K, v.Kind, v.Description)
		}
	}
	if v := upgrade(rep); v == nil || v.FailedStep != 2 || v.NewOutcome.Kind != kavach.Crash {
		t.Errorf("wrong fix: upgrade variant %+v, want it failed at step 2 by a crash", v)
	}

	off := *fx
	f := *fx.Failure
	f.ExcludeVariants = []string{"upgrade"}
	off.Failure = &f
	if rep := grade1(&off, wrong); rep.Verdict != "fixed" || upgrade(rep) != nil {
		t.Errorf("wrong fix with upgrade excluded: %s (upgrade variant %+v), want fixed and none", rep.Verdict, upgrade(rep))
	}
}
