package grade_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/invariants"
	"github.com/kavach-dev/kavach/replay"
)

// recordContract records a session that fails nowhere on build: a
// contract (a fixture with no failure).
func recordContract(t *testing.T, build string, session [][]string) *fixtures.Fixture {
	t.Helper()
	out := filepath.Join(t.TempDir(), "contract.kavach")
	if err := incidents.RecordSession(out, build, session); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Failure != nil {
		t.Fatalf("recorded failure %+v, want none", fx.Failure)
	}
	return fx
}

func gradeContract(t *testing.T, fx *fixtures.Fixture, old, new string, set *invariants.Set) *grade.Report {
	t.Helper()
	c := redis.Integration{}
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
		grade.Options{Integration: c, MinVariants: 10, Variants: 64, Seed: 1, Memo: gradetest.OldReplays, Invariants: set})
	if err != nil {
		t.Fatal(err)
	}
	gradetest.ReadBack(t, rep)
	if !rep.Evidence.Contract || rep.Fixture.Failure != nil {
		t.Errorf("evidence contract=%v, fixture failure %+v: want a contract", rep.Evidence.Contract, rep.Fixture.Failure)
	}
	return rep
}

func TestContracts(t *testing.T) {
	t.Parallel()
	pristine := redisbuild.MustBuild(t)
	// The GETRANGE session, on a build it does not crash: ordinary traffic.
	fx := recordContract(t, pristine, incidents.Getrange)
	for _, tc := range []struct {
		name, why string
		old, new  string
		want      string
		check     func(t *testing.T, rep *grade.Report)
	}{
		{
			name: "same build", why: "every step and every regression variant gives the recording's answer",
			old: pristine, new: pristine, want: "held",
			check: func(t *testing.T, rep *grade.Report) {
				v := rep.Evidence.Variants
				if v.Regression < 10 || v.Handled < 10 || v.Passing != v.Handled || v.Generated != 0 {
					t.Errorf("variants: %d regression, %d handled, %d pass, %d of the incident", v.Regression, v.Handled, v.Passing, v.Generated)
				}
				if ck := rep.Checked(); !ck.Contract || ck.StepsCompared != 5 || ck.StepsBeforeFailure != 5 {
					t.Errorf("checked %+v: want 5 of 5 steps compared", ck)
				}
			},
		},
		{
			name: "planted regression", why: "STRLEN is off by one: step 3 answers 11, recorded 12",
			old: pristine, new: redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenBroken)...), want: "diverged@3",
			check: func(t *testing.T, rep *grade.Report) {
				f := rep.Findings[0]
				if len(f.Diffs) != 1 || f.Diffs[0].Want != "12" || f.Diffs[0].Got != "11" {
					t.Errorf("diffs %+v, want 12 -> 11", f.Diffs)
				}
			},
		},
		{
			name: "planted crash", why: "the new build crashes on GETRANGE greeting -100 -1, step 5",
			old: pristine, new: redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...), want: "diverged@5",
			check: func(t *testing.T, rep *grade.Report) {
				if f := rep.Findings[0]; f.Outcome.Kind != kavach.Crash || !strings.Contains(f.Detail, "crash") {
					t.Errorf("finding %+v: want the crash", f)
				}
			},
		},
		{
			name: "old build does not replay its recording", why: "OLD crashes at step 5, which it answered when recorded",
			old: redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...), new: pristine,
			want: "unverified(not-replayed: step 5 gave crash on the old build, recorded ok)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := gradeContract(t, fx, tc.old, tc.new, nil)
			if rep.Verdict != tc.want {
				t.Fatalf("%s (%s): verdict %s, want %s\nfindings: %+v", tc.name, tc.why, rep.Verdict, tc.want, rep.Findings)
			}
			if tc.check != nil {
				tc.check(t, rep)
			}
		})
	}
}

func TestContractInvariants(t *testing.T) {
	t.Parallel()
	set, err := invariants.Parse("strlen.invariants", incidents.StrlenInvariants)
	if err != nil {
		t.Fatal(err)
	}
	pristine := redisbuild.MustBuild(t)
	short := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenOld)...) // long strings counted one short

	// Planted invariant break: the new build counts step 6's 24-byte value
	// as 23. The step differs from the recording too; the invariant,
	// which names what is wrong, is the headline.
	fx := recordContract(t, pristine, incidents.Strlen)
	rep := gradeContract(t, fx, pristine, short, set)
	if rep.Verdict != "invariant_violated(strlen-matches)@6" {
		t.Fatalf("planted invariant break: %s, want invariant_violated(strlen-matches)@6; findings %+v", rep.Verdict, rep.Findings)
	}
	if len(rep.Evidence.OldUnmet) != 0 {
		t.Errorf("the old build meets every invariant, but the report says %+v", rep.Evidence.OldUnmet)
	}

	// A feature: the traffic recorded on a build without it (long strings
	// counted one short), the invariant written for it. The old build
	// does not meet it, as expected; the new build does, and answers
	// step 6 differently from the recording as the feature says it must.
	fx = recordContract(t, short, incidents.Strlen)
	rep = gradeContract(t, fx, short, pristine, set)
	if rep.Verdict != "held" {
		b, _ := json.MarshalIndent(rep.Findings, "", " ")
		t.Fatalf("feature met: %s, want held; findings %s", rep.Verdict, b)
	}
	if u := rep.Evidence.OldUnmet; len(u) != 1 || u[0].Name != "strlen-matches" || u[0].FirstStep != 6 {
		t.Errorf("old build's unmet invariants %+v, want strlen-matches at step 6", u)
	}
	// The feature not delivered: the new build is the old one.
	if rep := gradeContract(t, fx, short, short, set); rep.Verdict != "invariant_violated(strlen-matches)@6" {
		t.Errorf("feature missing: %s, want invariant_violated(strlen-matches)@6", rep.Verdict)
	}
}

func TestDeriveContract(t *testing.T) {
	t.Parallel()
	ok := kavach.Outcome{Kind: kavach.OK}
	base := func() grade.Evidence {
		return grade.Evidence{
			Contract: true,
			Old: grade.OldEvidence{Steps: []grade.StepEvidence{
				{Step: 1, Ran: true, Recorded: ok, Outcome: ok}, {Step: 2, Ran: true, Recorded: ok, Outcome: ok}, {Step: 3, Ran: true, Recorded: ok, Outcome: ok}}},
			New: grade.NewEvidence{Steps: []grade.StepEvidence{
				{Step: 1, Ran: true, Recorded: ok, Outcome: ok}, {Step: 2, Ran: true, Recorded: ok, Outcome: ok}, {Step: 3, Ran: true, Recorded: ok, Outcome: ok}}},
			Variants: grade.VariantsEvidence{Min: 2, Regression: 2, Handled: 2,
				List: []grade.VariantEvidence{{K: 1, Kept: true, Regression: true}, {K: 2, Kept: true, Regression: true}}},
		}
	}
	d := []replay.Diff{{Step: 2, Path: "reply[0]", Want: "1", Got: "2"}}
	for _, tc := range []struct {
		why  string
		edit func(*grade.Evidence)
		want string
	}{
		{"all checks pass", func(*grade.Evidence) {}, "held"},
		{"a step differs", func(e *grade.Evidence) { e.New.Steps[1].Diffs = d }, "diverged@2"},
		{"noise does not count", func(e *grade.Evidence) {
			e.New.Steps[1].Diffs = d
			e.Noise = []replay.NoiseField{{Step: 2, Path: "reply[0]"}}
		}, "held"},
		{"a crash", func(e *grade.Evidence) {
			e.New.Steps[2].Outcome = kavach.Outcome{Kind: kavach.Crash}
		}, "diverged@3"},
		{"a hang", func(e *grade.Evidence) {
			e.New.Steps[0].Outcome = kavach.Outcome{Kind: kavach.Hang}
			e.New.Steps[1].Ran, e.New.Steps[2].Ran = false, false
		}, "diverged@1"},
		{"stopped early with no broken step", func(e *grade.Evidence) { e.New.Steps[2].Ran = false }, "diverged@3"},
		{"an invariant, before a difference at its step", func(e *grade.Evidence) {
			e.New.Steps[1].Diffs = d
			e.Invariants = []grade.InvariantEvidence{{Name: "inv", FirstStep: 2}}
		}, "invariant_violated(inv)@2"},
		{"a feature's step is the invariant's to judge", func(e *grade.Evidence) {
			e.New.Steps[1].Diffs = d
			e.Old.Steps[1].Violated = []string{"inv"}
			e.Invariants = []grade.InvariantEvidence{{Name: "inv", Held: true}}
		}, "held"},
		{"a regression variant fails", func(e *grade.Evidence) { e.Variants.List[1].FailedStep = 3 }, "variant_failed(2)@3"},
		{"too few regression variants", func(e *grade.Evidence) { e.Variants.Min = 3 },
			"unverified(variants: 2 of 2 regression variants handled by the old build, need 3)"},
		{"old build does not replay its recording", func(e *grade.Evidence) {
			e.Old.Steps[1].Outcome = kavach.Outcome{Kind: kavach.Error, Class: "ERR"}
		}, "unverified(not-replayed: step 2 gave error:ERR on the old build, recorded ok)"},
		{"old build stopped", func(e *grade.Evidence) { e.Old.Steps[2].Ran, e.Old.Stopped = false, "gone" },
			"unverified(not-replayed: the old build's replay stopped before step 3: gone)"},
	} {
		ev := base()
		tc.edit(&ev)
		if got, _ := grade.Derive(ev); got.String() != tc.want {
			t.Errorf("%s: Derive = %s, want %s", tc.why, got, tc.want)
		}
	}
}

func TestSuiteHeadline(t *testing.T) {
	t.Parallel()
	fixed, held := grade.Verdict{Kind: grade.Fixed}, grade.Verdict{Kind: grade.Held}
	red := grade.Verdict{Kind: grade.Diverged, Step: 3}
	red2 := grade.Verdict{Kind: grade.StillFailing, Step: 5}
	unv := grade.Verdict{Kind: grade.Unverified, Reason: "variants: 1 of 2"}
	for _, tc := range []struct {
		why      string
		verdicts []grade.Verdict
		contract []bool
		want     string
		at       int
	}{
		{"an incident fixed, a contract diverged", []grade.Verdict{fixed, red}, []bool{false, true}, "diverged@3", 1},
		{"the first red in argument order", []grade.Verdict{unv, red2, red}, []bool{false, false, true}, "still_failing@5", 1},
		{"unverified when nothing is red", []grade.Verdict{fixed, unv}, []bool{false, true}, "unverified(variants: 1 of 2)", 1},
		{"an incident among green fixtures: fixed", []grade.Verdict{held, fixed}, []bool{true, false}, "fixed", -1},
		{"contracts only: held", []grade.Verdict{held, held}, []bool{true, true}, "held", -1},
	} {
		got, at := grade.Headline(tc.verdicts, tc.contract)
		if got.String() != tc.want || at != tc.at {
			t.Errorf("%s: headline %s at %d, want %s at %d", tc.why, got, at, tc.want, tc.at)
		}
	}
}
