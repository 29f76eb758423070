package grade_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// A fix made only where ZUNIONSTORE's source keys are sorted sets (or
// sets): on a source key of another type it still refuses the negative
// weight, where the correct fix answers WRONGTYPE. The source keys are
// found by reading numkeys, as the key specs of COMMAND INFO say; only a
// type variant on a source key sees the fault (a key of another type as
// the destination is overwritten by both builds alike).
func TestTypeSubstitutionAtKeysFromKeySpecs(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ZunionstoreOld)...)
	fixed := redisbuild.MustBuild(t)
	zsetsOnly := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ZunionstoreZsetsOnly)...)
	out := filepath.Join(t.TempDir(), "zunionstore.kavach")
	if err := incidents.RecordZunionstore(out, old); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}

	rep := diff(t, fx, old, fixed, 10)
	if rep.Verdict != "fixed" || rep.Evidence.Variants.Reproducing < 10 {
		t.Fatalf("correct fix: %s with %d variants reproducing, want fixed with 10; findings %+v",
			rep.Verdict, rep.Evidence.Variants.Reproducing, rep.Findings)
	}
	sources := 0
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind == "type" && v.Kept && (strings.Contains(v.Description, ": argument 3 (key)") || strings.Contains(v.Description, ": argument 4 (key)")) {
			sources++
		}
	}
	// Two source keys, each on the build's six types: all but one at the
	// default budget since the connection modes take a group of it.
	if sources < 11 {
		t.Errorf("correct fix: %d type variants on a source key reproduced the failure, want 11 of 12", sources)
	}

	rep = diff(t, fx, old, zsetsOnly, 10)
	if !strings.HasPrefix(rep.Verdict, "variant_failed(") {
		t.Fatalf("fix for sorted sets only: %s, want variant_failed; findings %+v", rep.Verdict, rep.Findings)
	}
	for _, v := range rep.Evidence.Variants.List {
		if v.FailedStep > 0 && v.Kind != "type" {
			t.Errorf("fix for sorted sets only: variant %d (%s, %s) failed: another mechanism sees the fault, the test proves nothing", v.K, v.Kind, v.Description)
		}
		if v.FailedStep > 0 && strings.Contains(v.Description, ": argument 1 (key)") {
			t.Errorf("fix for sorted sets only: variant %d on the destination failed (%s): the destination is overwritten alike", v.K, v.Description)
		}
	}
}
