package grade_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/invariants"
)

// TestDependsOnWritesOnly: the failing step is a read (STRLEN greeting at
// step 6, a wrong answer), and a later step reads the same key (GETRANGE
// greeting 1 3 at step 9). The fix changes the failing read's answer and
// no state: a changed answer at step 9 is the candidate's own, not the
// fix's.
func TestDependsOnWritesOnly(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenOld)...)
	out := filepath.Join(t.TempDir(), "strlen-read.kavach")
	if err := incidents.RecordStrlenThenRead(out, old); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	set, err := invariants.Parse("strlen.invariants", incidents.StrlenInvariants)
	if err != nil {
		t.Fatal(err)
	}
	run := func(new string) *grade.Report {
		t.Helper()
		c := redis.Integration{}
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
			grade.Options{Integration: c, Seed: 1, Invariants: set})
		if err != nil {
			t.Fatal(err)
		}
		gradetest.ReadBack(t, rep)
		return rep
	}

	// The correct fix: step 6 answers 24 (recorded 23), nothing else moves.
	fixed := run(redisbuild.MustBuild(t))
	if fixed.Verdict != "fixed" {
		t.Fatalf("correct fix: %s, want fixed; findings %+v", fixed.Verdict, fixed.Findings)
	}
	for _, s := range fixed.Evidence.New.Steps {
		switch s.Step {
		case 6:
			if len(s.Keys) != 1 || s.Keys[0] != "greeting" || !s.WritesKnown || len(s.Writes) != 0 {
				t.Errorf("STRLEN greeting: keys %v, writes %v (known %v), want [greeting] read only", s.Keys, s.Writes, s.WritesKnown)
			}
		case 7:
			if !s.WritesKnown || len(s.Writes) != 1 || s.Writes[0] != "tag" {
				t.Errorf("SET tag ab: writes %v (known %v), want [tag]", s.Writes, s.WritesKnown)
			}
		}
	}

	// Planted fault: STRLEN right, and GETRANGE off by one for a positive
	// start. Step 9 reads the key the failing step read, which no changed
	// step wrote: the fix does not explain its new answer.
	wrong := run(redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOffByOne)...))
	if wrong.Verdict != "diverged@9" {
		t.Errorf("fix breaking a later read of the failing step's key: %s, want diverged@9; findings %+v", wrong.Verdict, wrong.Findings)
	} else if f := wrong.Findings[0]; f.Rule != grade.RuleObserved || len(f.Inputs) == 0 {
		// Red now because what step 9 read is the same on both builds
		// (the fingerprint of greeting), not because of a guess.
		t.Errorf("step 9 judged by rule %q with inputs %v, want the observed rule and greeting's fingerprint", f.Rule, f.Inputs)
	}
}
