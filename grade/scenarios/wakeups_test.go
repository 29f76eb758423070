package scenarios_test

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/axumbuild"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/record"
)

// The tests below are the shapes of a wrong fix one step away from the
// failing request that the wakeup and aggregate kinds catch
// (docs/variants.md, "Across connections" and "Aggregates"), on planted
// faults of our own. Each grades the correct fix fixed, the wrong fix
// variant_failed by the kind alone, and the wrong fix fixed again with
// that kind switched off (the fixture marked with --exclude KIND): so the
// kind, and nothing else, is what caught it.

// gradeKind grades new against fx, with the failure's variants of kind
// excluded when exclude is set, as kavach mark --exclude does; the
// budget is opts.Variants, 64 (the default) when zero.
func gradeKind(t *testing.T, fx *fixtures.Fixture, old, new kavach.Launch, opts grade.Options, kind string, exclude bool) *grade.Report {
	t.Helper()
	if exclude {
		cp := *fx
		f := *fx.Failure
		f.ExcludeVariants = []string{kind}
		cp.Failure = &f
		fx = &cp
	}
	opts.Variants, opts.MinVariants, opts.Seed = cmp.Or(opts.Variants, 64), 10, 1
	opts.Memo = cmp.Or(opts.Memo, gradetest.OldReplays)
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, opts.Integration), old, new, opts)
	if err != nil {
		t.Fatal(err)
	}
	if parts, _ := grade.Derive(rep.Evidence); parts.String() != rep.Verdict {
		t.Errorf("evidence gives %s, verdict %s", parts, rep.Verdict)
	}
	return rep
}

// checkCaughtBy checks the three grades of one shape: the correct fix
// fixed, with variants of kind run and handled or reproducing; the wrong
// fix variant_failed by variants of kind only, which the by-kind counts
// show; the wrong fix fixed with kind excluded.
func checkCaughtBy(t *testing.T, kind string, run func(new kavach.Launch, exclude bool) *grade.Report, fixed, wrong kavach.Launch) {
	t.Helper()
	rep := run(fixed, false)
	if rep.Verdict != "fixed" {
		for _, v := range rep.Evidence.Variants.List {
			if v.FailedStep > 0 {
				t.Logf("correct fix: variant %d (%s, %s) failed at step %d: old %+v, new %+v, diffs %+v", v.K, v.Kind, v.Description, v.FailedStep, v.OldOutcome, v.NewOutcome, v.Diffs)
			}
		}
		t.Fatalf("correct fix: %s, want fixed; findings %+v", rep.Verdict, rep.Findings)
	}
	i := slices.IndexFunc(rep.Evidence.Variants.ByKind, func(k grade.KindCount) bool { return k.Kind == kind })
	if i < 0 || rep.Evidence.Variants.ByKind[i].Handled+rep.Evidence.Variants.ByKind[i].Reproduced == 0 {
		t.Fatalf("correct fix: no %s variant kept; by kind %+v", kind, rep.Evidence.Variants.ByKind)
	}

	rep = run(wrong, false)
	if !strings.HasPrefix(rep.Verdict, "variant_failed(") {
		for _, v := range rep.Evidence.Variants.List {
			t.Logf("variant %d (%s, %s) kept %v: old %+v, new %+v", v.K, v.Kind, v.Description, v.Kept, v.OldOutcome, v.NewOutcome)
		}
		t.Fatalf("wrong fix: %s, want variant_failed; findings %+v", rep.Verdict, rep.Findings)
	}
	for _, v := range rep.Evidence.Variants.List {
		if v.FailedStep > 0 {
			t.Logf("wrong fix: variant %d (%s) failed at step %d: %s", v.K, v.Kind, v.FailedStep, v.Description)
			if v.Kind != kind {
				t.Errorf("wrong fix: variant %d (%s, %s) failed: another kind sees the fault, the test proves nothing", v.K, v.Kind, v.Description)
			}
		}
	}
	i = slices.IndexFunc(rep.Evidence.Variants.ByKind, func(k grade.KindCount) bool { return k.Kind == kind })
	if i < 0 || rep.Evidence.Variants.ByKind[i].Failed == 0 {
		t.Errorf("wrong fix: the by-kind counts show no %s variant failed: %+v", kind, rep.Evidence.Variants.ByKind)
	}

	rep = run(wrong, true)
	if rep.Verdict != "fixed" {
		t.Errorf("wrong fix, %s excluded: %s, want fixed (nothing else sees it); findings %+v", kind, rep.Verdict, rep.Findings)
	}
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind == kind {
			t.Errorf("%s excluded, yet variant %d made: %s", kind, v.K, v.Description)
		}
	}
}

// Shape 4: a blocked pop woken by another connection's push. The old
// build refuses a BLMPOP woken with fewer elements than its COUNT
// (BLMPOP 0 1 jobs LEFT COUNT 5, woken by RPUSH jobs a b). The wrong fix
// makes a woken BLMPOP take the whole list, whatever its COUNT: the
// incident's answer (both elements) is right, and every variant the old
// build fails (a larger COUNT, the push twice, a timeout) is answered the
// same by both fixes. Only the woken pop with COUNT 1 — which the old
// build handles, so no variant of the incident keeps it — shows the
// wrong fix taking two elements where the old build took one.
func TestWakeupsCatchWokenCount(t *testing.T) {
	t.Parallel()
	checkWoken(t, "wakeup", incidents.WokenRefuses, incidents.WokenTakesAll)
}

// checkWoken records the wake-up incident (incidents.WokenShort) on the
// build of the old patches and checks that kind alone catches the build
// of the wrong ones, the pristine build fixed (checkCaughtBy).
func checkWoken(t *testing.T, kind string, oldPatches, wrongPatches []string) {
	t.Helper()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(oldPatches)...)
	fixed := redisbuild.MustBuild(t)
	wrong := redisbuild.MustBuild(t, incidents.PatchPaths(wrongPatches)...)
	fx, err := incidents.RecordClients(t.TempDir(), old, incidents.WokenShort)
	if err != nil {
		t.Fatal(err)
	}
	fx = markAt(t, fx.Path, []string{"BLMPOP", "0", "1", "jobs", "LEFT", "COUNT", "5"}, "error")
	c := redis.Integration{}
	opts := grade.Options{Integration: c}
	checkCaughtBy(t, kind, func(new kavach.Launch, exclude bool) *grade.Report {
		return gradeKind(t, fx, kavach.Launch{Path: old}, new, opts, kind, exclude)
	}, kavach.Launch{Path: fixed}, kavach.Launch{Path: wrong})
}

// A sibling with its scenario (#41 item 2): the old build refuses a
// blocked pop woken with fewer elements than its COUNT, on a list
// (BLMPOP) and on a sorted set (BZMPOP), and the wrong fix mends the
// list's path only. The incident is the list's: BLMPOP 0 1 jobs LEFT
// COUNT 5 woken by another connection's RPUSH jobs a b. Only the
// BZMPOP sibling sees the wrong fix, and only when it is woken as the
// recorded pop was: the push translated into a ZADD of its key from the
// other connection, its timeout the recorded one. Sent alone, on a
// sorted set of the type's default content, it is answered at once and
// the old build never fails it.
func TestSiblingScenarioCatchesAFixOfOneType(t *testing.T) {
	t.Parallel()
	checkWoken(t, "sibling", incidents.WokenRefusesBoth, incidents.WokenFixListsOnly)
}

// Shape 5: a metrics page every earlier request feeds. The old build
// counts every 2xx response other than 200 twice, and its metrics page
// refuses (500) once it has counted more responses than requests. The
// incident creates an item (201), reads it back, deletes a missing item
// (404) and reads the page: refused. The narrow fix counts a 201 once
// and a 204 still twice: the incident's page is right. Only a variant of
// the DELETE (an existing item: 204), a request on another path than the
// page's, sees it.
func TestAggregatesCatchNarrowFeedFix(t *testing.T) {
	t.Parallel()
	patch := func(name string) string {
		p, err := filepath.Abs(filepath.Join("..", "..", "internal", "axumbuild", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	gauge, twice, narrow := patch("metrics-in-flight.patch"), patch("responses-counted-twice.patch"), patch("responses-fix-created-only.patch")
	args := []string{"--port", "{port}"}
	old := kavach.Launch{Path: axumbuild.MustBuild(t, gauge, twice), Args: args}
	fixed := kavach.Launch{Path: axumbuild.MustBuild(t, gauge), Args: args}
	wrong := kavach.Launch{Path: axumbuild.MustBuild(t, gauge, twice, narrow), Args: args}
	out := filepath.Join(t.TempDir(), "metrics.kavach")
	if err := incidents.RecordHTTPAnswered(out, old, incidents.MetricsFed); err != nil {
		t.Fatal(err)
	}
	c := axum.Integration{}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := record.FailureAt(fx, c, 4, kavach.Oracle{Kind: kavach.Error})
	if err != nil {
		t.Fatal(err)
	}
	if err := fixtures.Amend(out, fixtures.Amendment{Failure: &f}); err != nil {
		t.Fatal(err)
	}
	if fx, err = fixtures.Load(out); err != nil {
		t.Fatal(err)
	}
	opts := grade.Options{Integration: c}
	checkCaughtBy(t, "aggregate", func(new kavach.Launch, exclude bool) *grade.Report {
		return gradeKind(t, fx, old, new, opts, "aggregate", exclude)
	}, fixed, wrong)
}
