package grade_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// recordIncrby records the INCRBY incident on old, marked with oracle.
func recordIncrby(t *testing.T, old, oracle string) *fixtures.Fixture {
	t.Helper()
	out := filepath.Join(t.TempDir(), "incrby.kavach")
	if err := incidents.RecordIncrby(out, old, oracle); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

func TestErrorSignatureIsTheMessage(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IncrbyOld)...)
	fixed := redisbuild.MustBuild(t)
	fx := recordIncrby(t, old, "error")
	if want := "error:ERR negative increment not allowed"; fx.Failure.Signature != want {
		t.Fatalf("kavach mark --oracle error recorded %q, want %q", fx.Failure.Signature, want)
	}

	// The correct fix. Its variants meet other ERR replies, the same on
	// both builds (a huge increment, a removed argument): they neither
	// reproduce the failure nor fail the new build.
	rep := diff(t, fx, old, fixed, 10)
	if rep.Verdict != "fixed" {
		t.Fatalf("correct fix: %s, want fixed; findings %+v", rep.Verdict, rep.Findings)
	}
	otherErr := 0
	for _, v := range rep.Evidence.Variants.List {
		if v.Regression {
			continue
		}
		if v.Kept && !strings.Contains(v.OldOutcome.Detail, "negative increment") {
			t.Errorf("variant %d (%s) kept on %+v: not the recorded failure", v.K, v.Description, v.OldOutcome)
		}
		if !v.Kept && strings.Contains(v.OldOutcome.Detail, "ERR") {
			otherErr++
		}
	}
	if otherErr == 0 {
		t.Error("no variant met another ERR reply: the test shows nothing")
	}

	// The loose class signature, error:ERR, counts those other errors as
	// the failure, and the correct fix "still fails" them: why kavach mark
	// --oracle error records the message.
	if loose := diff(t, recordIncrby(t, old, "error:ERR"), old, fixed, 10); !strings.HasPrefix(loose.Verdict, "variant_failed(") {
		t.Errorf("correct fix with the loose signature error:ERR: %s, want variant_failed (the looseness the message removes)", loose.Verdict)
	}

	// Planted fault: a fix for the incident's -3 only. Other negative
	// increments give the very signature on the new build.
	narrow := diff(t, fx, old, redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IncrbyNarrow)...), 10)
	if !strings.HasPrefix(narrow.Verdict, "variant_failed(") || !strings.Contains(narrow.Findings[0].Outcome.Detail, "negative increment") {
		t.Errorf("narrow fix: %s, want variant_failed on the recorded signature; findings %+v", narrow.Verdict, narrow.Findings)
	}

	// Planted fault: the fix breaks STRLEN, which the incident uses only
	// after the failure, on a key no changed step touches.
	after := diff(t, fx, old, redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IncrbyStrlen)...), 0)
	if after.Verdict != "diverged@6" {
		t.Errorf("fix breaking a step after the failure: %s, want diverged@6; findings %+v", after.Verdict, after.Findings)
	}
	// The correct fix changed step 7 (GET counter: 12, recorded 15): the
	// fix explains it, counter being the key the failing step wrote.
	var s7 *struct{ keys []string }
	for _, s := range rep.Evidence.New.Steps {
		if s.Step == 7 {
			s7 = &struct{ keys []string }{s.Keys}
			if len(s.Diffs) == 0 || s.Output == nil {
				t.Errorf("step 7 on the correct fix: diffs %v, output %v: want the changed GET kept in the report", s.Diffs, s.Output)
			}
		}
	}
	if s7 == nil || len(s7.keys) != 1 || s7.keys[0] != "counter" {
		t.Errorf("step 7 keys %v, want [counter] from COMMAND GETKEYS", s7)
	}
}
