package grade_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/invariants"
)

// checkWritersCaughtBy grades the correct fix (fixed, some variants of kind
// kept), the wrong one (variant_failed, every failed variant of kind),
// and the wrong one again with kind switched off (fixed): kind, and
// nothing else, sees the wrong fix.
func checkWritersCaughtBy(t *testing.T, fx *fixtures.Fixture, old, fixed, wrong string, budget int, kind string) {
	t.Helper()
	checkKindCatches(t, fx, old, fixed, wrong, budget, kind, nil)
}

// checkKindCatches is checkWritersCaughtBy with the invariants set (nil:
// none).
func checkKindCatches(t *testing.T, fx *fixtures.Fixture, old, fixed, wrong string, budget int, kind string, set *invariants.Set) {
	t.Helper()
	logFailed := func(what string, r *grade.Report) {
		for _, v := range r.Evidence.Variants.List {
			if v.FailedStep > 0 {
				t.Logf("%s: variant %d (%s): %s\n  old: step %d %s\n  new: step %d %s %+v", what, v.K, v.Kind, v.Description, v.OldStep, v.OldOutcome, v.FailedStep, v.NewOutcome, v.Diffs)
			}
		}
	}
	rep := diffBudgetWith(t, fx, old, fixed, budget, set)
	if rep.Verdict != "fixed" || rep.Evidence.Variants.Reproducing < 10 {
		logFailed("correct fix", rep)
		t.Fatalf("correct fix: %s with %d variants reproducing, want fixed with 10; findings %+v", rep.Verdict, rep.Evidence.Variants.Reproducing, rep.Findings)
	}
	kept := 0
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind == kind && v.Kept {
			kept++
		}
	}
	if kept == 0 {
		t.Errorf("correct fix: no %s variant kept", kind)
	}
	if !slices.ContainsFunc(rep.Evidence.Variants.ByKind, func(k grade.KindCount) bool { return k.Kind == kind && k.Generated > 0 }) {
		t.Errorf("correct fix: by kind %+v has no %s", rep.Evidence.Variants.ByKind, kind)
	}

	bad := diffBudgetWith(t, fx, old, wrong, budget, set)
	if !strings.HasPrefix(bad.Verdict, "variant_failed(") {
		t.Fatalf("wrong fix: %s, want variant_failed; findings %+v", bad.Verdict, bad.Findings)
	}
	for _, v := range bad.Evidence.Variants.List {
		if v.FailedStep > 0 && v.Kind != kind {
			t.Errorf("wrong fix: variant %d (%s, %s) failed: another kind sees the fault, the test proves nothing", v.K, v.Kind, v.Description)
		}
	}
	logFailed("wrong fix", bad)

	off := *fx
	f := *fx.Failure
	f.ExcludeVariants = []string{kind}
	off.Failure = &f
	rep = diffBudgetWith(t, &off, old, wrong, budget, set)
	if rep.Verdict != "fixed" {
		logFailed("wrong fix, "+kind+" off", rep)
		t.Fatalf("wrong fix with %s switched off: %s, want fixed (what caught it was %s)", kind, rep.Verdict, kind)
	}
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind == kind {
			t.Fatalf("%s switched off, yet variant %d: %s", kind, v.K, v.Description)
		}
	}
}

// The failure depends on state written earlier: the old build refuses an
// XRANGE whose walk spans more than 2^32-1 ms, from the start bound to
// the first entry or between two entries. The wrong fix widens the first
// span only, the one the incident's range hits; entries written with a
// large gap between their ids still fail. The failing request's own
// variants keep the recorded entries 1 ms apart; only the stream ids of
// the earlier XADDs, varied (writer-value), put a gap between entries.
// A budget of 200 keeps every writer's forms: the default keeps the first
// of some writers only (their ms part past 2^63, which this old build
// refuses), and which ones is the seed's choice.
func TestWriterValuesCatchStateWrittenEarlier(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.WritersOld)...)
	fixed := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StreamGapFixed)...)
	wrong := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.WritersWrong)...)
	fx := recordValues(t, old, incidents.RecordStreamGap)
	if !strings.HasPrefix(fx.Failure.Signature, "error:ERR stream range span past") {
		t.Fatalf("recorded %q, want the refusal of the range", fx.Failure.Signature)
	}
	checkWritersCaughtBy(t, fx, old, fixed, wrong, 200, "writer-value")
}

// A lossy round trip: the wrong fix of INCRBYFLOAT's refusal of negative
// increments also writes a fractional result through a double, 17
// digits: 2.6 reads back as 2.6000000000000001. The incident's own
// numbers (12.5) read back exactly, and the failing step's key is
// another one; only a fraction written where the recording later reads
// the value back (read-back) compares the two builds on it, within the
// default budget.
func TestReadBackCatchesALossyRoundTrip(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.WritersOld)...)
	fixed := redisbuild.MustBuild(t)
	wrong := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.WritersWrong)...)
	fx := recordValues(t, old, incidents.RecordFloatReadBack)
	if want := "error:ERR negative float increment not allowed"; fx.Failure.Signature != want {
		t.Fatalf("recorded %q, want %q", fx.Failure.Signature, want)
	}
	checkWritersCaughtBy(t, fx, old, fixed, wrong, 64, "read-back")
}

// The cause is a writer, not the failing read: the old build stores a
// hash decrement twice (the reply right), and the HGET after it breaks an
// invariant. The wrong fix mends HINCRBY, the recorded writer, only;
// HINCRBYFLOAT still stores it twice. Every variant of the read, and every
// value of the writer, passes; only the writer made by its sibling
// (sibling, place writer) sees it, at the default budget. The correct fix
// (the pristine source) stays fixed.
func TestWriterSiblingsCatchAFixOfOneWriter(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.HashDecrementOld)...)
	fixed := redisbuild.MustBuild(t)
	wrong := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.HashDecrementHincrbyOnly)...)
	fx := recordScript(t, old, incidents.RecordHashDecrement)
	set := gradetest.ParseSet(t, incidents.HashDecrementInvariants)
	checkKindCatches(t, fx, old, fixed, wrong, 64, "sibling", set)
}
