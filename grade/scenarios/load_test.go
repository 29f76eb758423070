package scenarios_test

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/loadtest"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/invariants"
)

// TestSameVerdictUnderLoad grades the GETRANGE example's committed
// fixture (recorded with stock redis-cli: a worker blocked in BLPOP on
// its own connection, woken by another's LPUSH, then the crash) again and
// again while stress-ng saturates every core: the correct fix is fixed
// every time, and the narrow fix is red every time.
func TestSameVerdictUnderLoad(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "examples", "redis-getrange-crash")
	old := redisbuild.MustBuild(t, filepath.Join(dir, "bug.patch"))
	correct := redisbuild.MustBuild(t, filepath.Join(dir, "bug.patch"), filepath.Join(dir, "candidates", "correct.patch"))
	narrow := redisbuild.MustBuild(t, filepath.Join(dir, "bug.patch"), filepath.Join(dir, "candidates", "narrow.patch"))
	fx, err := fixtures.Load(filepath.Join(dir, "fixture.kavach"))
	if err != nil {
		t.Fatal(err)
	}
	defer loadtest.Stress(t)()

	c := redis.Integration{}
	grade1 := func(new string) string {
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
			grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Verdict
	}
	for i := range loadtest.Runs(10) {
		if v := grade1(correct); v != "fixed" {
			t.Fatalf("run %d of the correct fix under load: %s", i+1, v)
		}
	}
	for i := range 2 {
		if v := grade1(narrow); !strings.HasPrefix(v, "variant_failed(") {
			t.Fatalf("run %d of the narrow fix under load: %s", i+1, v)
		}
	}
}

// TestInvariantBrokenOnBothBuildsIsNoVariantFailure: the STRLEN example's
// correct fix is fixed although a regression variant (SET ... NX, which
// does not set) makes its "GET returns what SET set" invariant false on
// both builds alike; the narrow fix is still red.
func TestInvariantBrokenOnBothBuildsIsNoVariantFailure(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "examples", "redis-strlen-wrong-answer")
	bug := filepath.Join(dir, "bug.patch")
	old := redisbuild.MustBuild(t, bug)
	fx, err := fixtures.Load(filepath.Join(dir, "fixture.kavach"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := invariants.Load(filepath.Join(dir, "strlen.invariants"))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.Integration{}
	for candidate, want := range map[string]string{"correct": "fixed", "narrow": "variant_failed("} {
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old},
			kavach.Launch{Path: redisbuild.MustBuild(t, bug, filepath.Join(dir, "candidates", candidate+".patch"))},
			grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1, Invariants: set})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(rep.Verdict, want) {
			t.Errorf("%s: %s, want %s; findings %+v", candidate, rep.Verdict, want, rep.Findings)
		}
	}
}

// TestInsertedWritesUnderLoad: regression variants of the STRLEN example
// that write a key of another type in front of an earlier step (requests
// with no recorded reply, kavach.Inserted) are graded old build against
// new, again and again while stress-ng saturates every core: the correct
// fix is fixed every time. The replay once counted the recorded reply
// against the inserted write, closed the connection before the recorded
// request was answered, and graded this fix variant_failed about every
// other run under load.
func TestInsertedWritesUnderLoad(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "examples", "redis-strlen-wrong-answer")
	bug := filepath.Join(dir, "bug.patch")
	old := redisbuild.MustBuild(t, bug)
	correct := redisbuild.MustBuild(t, bug, filepath.Join(dir, "candidates", "correct.patch"))
	fx, err := fixtures.Load(filepath.Join(dir, "fixture.kavach"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := invariants.Load(filepath.Join(dir, "strlen.invariants"))
	if err != nil {
		t.Fatal(err)
	}
	defer loadtest.Stress(t)()
	c := redis.Integration{}
	for i := range loadtest.Runs(4) {
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: correct},
			grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1, Invariants: set})
		if err != nil {
			t.Fatal(err)
		}
		inserted := 0
		for _, v := range rep.Evidence.Variants.List {
			if v.Regression && v.Kept && strings.Contains(v.Description, "kavach:type:") {
				inserted++
			}
		}
		if inserted == 0 {
			t.Fatalf("run %d: no regression variant with an inserted write was kept: the test shows nothing", i+1)
		}
		if rep.Verdict != "fixed" {
			t.Fatalf("run %d of the correct fix under load: %s; findings %+v", i+1, rep.Verdict, rep.Findings)
		}
	}
}
