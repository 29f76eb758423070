package grade_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// A difference of the new build from the recording that the old build
// also gives, asked again, is the old build's noise; one it never gives
// stands (Options.Confirm).
//
// The contract pops one member at random from each of 300 sets of two and
// asks whether the first is left: an answer the build draws at random
// with two outcomes (SPOP's own reply is normalized as random; what it
// left is not). Three replays of the old build all answer a step as recorded
// one time in eight, and the new build then differs one time in two: the
// build graded against itself, without asking again, is red unless every
// one of the 300 steps escapes that (15/16 each: about 4 in a billion).
// Asking the old build again finds those steps' noise. A planted
// STRLEN off by one, which no replay of the old build gives, stays red.
func TestDifferencesConfirmedOnTheOldBuild(t *testing.T) {
	t.Parallel()
	pristine := redisbuild.MustBuild(t)
	session := [][]string{{"SET", "greeting", "hello world!"}, {"STRLEN", "greeting"}}
	for i := range 300 {
		s := fmt.Sprintf("s%d", i)
		session = append(session, []string{"SADD", s, "a", "b"}, []string{"SPOP", s}, []string{"SISMEMBER", s, "a"})
	}
	fx := recordContract(t, pristine, session)
	run := func(newBuild string, confirm int) *grade.Report {
		t.Helper()
		c := redis.Integration{}
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: pristine}, kavach.Launch{Path: newBuild},
			grade.Options{Integration: c, Confirm: confirm})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	// Asked again 8 at a time: a step that survives the first time (all
	// 11 replays as recorded, the new build not: 300 steps, 0.07 of one)
	// is the old build's noise the next time but one time in 256.
	same := run(pristine, 8)
	if same.Verdict != grade.Held {
		t.Errorf("the build against itself, asking the old build again: %s, want held; findings %+v", same.Verdict, same.Findings)
	}
	if o := same.Evidence.Old; o.Confirming == 0 || o.Runs != 3+o.Confirming {
		t.Errorf("old build: %d replays, %d of them asked again: want 3 and some more", o.Runs, o.Confirming)
	}
	if off := run(pristine, -1); off.Verdict == grade.Held {
		t.Errorf("the build against itself, not asking again: held, want a difference found (every step escaped it)")
	}

	planted := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenBroken)...)
	c := redis.Integration{}
	small := recordContract(t, pristine, session[:2+3*10]) // its variants replay it whole
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(small, c), kavach.Launch{Path: pristine}, kavach.Launch{Path: planted},
		grade.Options{Integration: c, Confirm: 8, Variants: 16, MinVariants: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "diverged@2" {
		t.Errorf("planted STRLEN off by one: %s, want diverged@2; findings %+v", rep.Verdict, rep.Findings)
	}
	// Red by the recording's own steps: its variants' failures cannot
	// change the verdict, and none is asked of the old build again.
	failed := 0
	for _, v := range rep.Evidence.Variants.List {
		if v.FailedStep > 0 {
			failed++
		}
		if v.Confirming != 0 {
			t.Errorf("variant %d asked of the old build again (%d replays) after the steps were red", v.K, v.Confirming)
		}
	}
	if failed == 0 {
		t.Errorf("no variant failed on the planted STRLEN: the check above says nothing")
	}
}
