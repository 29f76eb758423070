package grade_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
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

// The GETRANGE incident: the old build lost the clamp of a negative start
// to 0, and an assertion kills it on GETRANGE greeting -100 -1.
type builds struct {
	old      string // the planted bug
	pristine string // the correct fix
	narrow   string // handles only the incident's exact input
	strlen   string // fixes nothing, and breaks STRLEN, a step before the failure
	offByOne string // fixes the incident, breaks GETRANGE with a positive start
}

func getBuilds(t *testing.T) builds {
	return builds{
		old:      redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...),
		pristine: redisbuild.MustBuild(t),
		narrow:   redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeNarrow)...),
		strlen:   redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenBroken)...),
		offByOne: redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOffByOne)...),
	}
}

// recordIncident records the GETRANGE incident on the old build.
func recordIncident(t *testing.T, old string) *fixtures.Fixture {
	t.Helper()
	out := filepath.Join(t.TempDir(), "getrange.kavach")
	if err := incidents.RecordGetrange(out, old); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Failure == nil || fx.Failure.Step != 5 || fx.Failure.Signature != "crash" {
		t.Fatalf("recorded failure %+v, want a crash at step 5", fx.Failure)
	}
	return fx
}

func diff(t *testing.T, fx *fixtures.Fixture, old, new string, minVariants int) *grade.Report {
	t.Helper()
	c := redis.Integration{}
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
		grade.Options{Integration: c, MinVariants: minVariants, Variants: 64, Seed: 1, Memo: gradetest.OldReplays})
	if err != nil {
		t.Fatal(err)
	}
	// The verdict must follow from the report's evidence alone, after a
	// round trip through JSON as `kavach verdict` reads it.
	gradetest.ReadBack(t, rep)
	return rep
}

func TestVerdicts(t *testing.T) {
	t.Parallel()
	b := getBuilds(t)
	fx := recordIncident(t, b.old)

	// Each row: a candidate new build, and the verdict it must get. The
	// rows with a planted fault are the ones that must turn red.
	for _, tc := range []struct {
		name, why   string
		old, new    string
		minVariants int
		want        string // the verdict, or its prefix when it ends in "("
		check       func(t *testing.T, rep *grade.Report)
	}{
		{
			name: "correct fix", why: "every check passes, and enough variants reproduce the failure",
			old: b.old, new: b.pristine, minVariants: 10, want: "fixed",
			check: func(t *testing.T, rep *grade.Report) {
				v := rep.Evidence.Variants
				if v.Reproducing < 10 || v.Passing < v.Reproducing || v.Handled == 0 {
					t.Errorf("variants: %d generated, %d reproduce, %d regression (%d handled), %d pass", v.Generated, v.Reproducing, v.Regression, v.Handled, v.Passing)
				}
			},
		},
		{
			name: "narrow fix", why: "planted fault: it handles the recorded input only, not its neighbours",
			old: b.old, new: b.narrow, minVariants: 10, want: "variant_failed(",
			check: func(t *testing.T, rep *grade.Report) {
				f := rep.Findings[0]
				if f.Outcome.Kind != kavach.Crash || strings.HasPrefix(f.Detail, "regression") || !strings.Contains(f.Detail, "step") {
					t.Errorf("headline finding %+v: want a crash on a variant of the incident", f)
				}
			},
		},
		{
			name: "fix that breaks a handled input", why: "planted fault: a positive GETRANGE start is off by one",
			old: b.old, new: b.offByOne, minVariants: 10, want: "variant_failed(",
			check: func(t *testing.T, rep *grade.Report) {
				f := rep.Findings[0]
				if !strings.Contains(f.Detail, "step 4") || !strings.Contains(f.Detail, `(start) "0" → "1"`) || len(f.Diffs) == 0 {
					t.Errorf("headline finding %+v: want a variant of step 4's start with a diff", f)
				}
			},
		},
		{
			name: "old build unchanged", why: "planted fault: the failure is still there",
			old: b.old, new: b.old, minVariants: 0, want: "still_failing@5",
			check: func(t *testing.T, rep *grade.Report) {
				f := rep.Findings[0]
				if f.Request != `GETRANGE "greeting" "-100" "-1"` || !strings.Contains(f.Detail, "'start >= 0' is not true") {
					t.Errorf("finding %+v lacks the request or the assertion", f)
				}
			},
		},
		{
			name: "breaks a step before the failure", why: "planted fault: STRLEN is off by one",
			old: b.old, new: b.strlen, minVariants: 0, want: "diverged@3",
			check: func(t *testing.T, rep *grade.Report) {
				f := rep.Findings[0]
				if len(f.Diffs) != 1 || f.Diffs[0].Path != "reply[0]" || f.Diffs[0].Want != "12" || f.Diffs[0].Got != "11" {
					t.Errorf("diffs = %+v, want reply[0]: 12 -> 11", f.Diffs)
				}
				// The recording's answer is kept beside the new one where they differ, and only there.
				for _, s := range rep.Evidence.New.Steps {
					if got, want := fmt.Sprint(s.RecordedOutput), map[int]string{3: "[12]"}[s.Step]; got != want && !(want == "" && len(s.RecordedOutput) == 0) {
						t.Errorf("step %d: recorded_output %s, want %q", s.Step, got, want)
					}
				}
				// A kept variant the new build fails by a difference keeps
				// the old outcome that kept it (the crash), not the old
				// build's answer at the differing step.
				n := 0
				for _, v := range rep.Evidence.Variants.List {
					if v.Kept && !v.Regression && v.FailedStep > 0 && len(v.Diffs) > 0 {
						n++
						if v.OldOutcome.Kind != kavach.Crash {
							t.Errorf("variant %d kept at step %d, failed by a difference at %d: old_outcome %+v, want the crash that kept it", v.K, v.OldStep, v.FailedStep, v.OldOutcome)
						}
					}
				}
				if n == 0 {
					t.Error("no kept variant failed by a difference")
				}
			},
		},
		{
			name: "old build does not fail", why: "planted fault: OLD is not the build the incident was recorded on",
			old: b.pristine, new: b.pristine, minVariants: 0,
			want: "unverified(not-reproduced: step 5 gave ok on the old build, recorded crash)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := diff(t, fx, tc.old, tc.new, tc.minVariants)
			if rep.Verdict != tc.want && !(strings.HasSuffix(tc.want, "(") && strings.HasPrefix(rep.Verdict, tc.want)) {
				t.Fatalf("%s (%s): verdict %s, want %s\nfindings: %+v", tc.name, tc.why, rep.Verdict, tc.want, rep.Findings)
			}
			if tc.check != nil {
				tc.check(t, rep)
			}
			// The timeline's placing of each step: its connection, and its
			// recorded time, never going back.
			var at int64
			for _, s := range rep.Evidence.New.Steps {
				if s.Conn == 0 || s.AtUS < at {
					t.Errorf("step %d: conn %d at %d µs (the step before at %d µs): want a connection and a time in order", s.Step, s.Conn, s.AtUS, at)
				}
				at = s.AtUS
			}
			if at == 0 {
				t.Errorf("the last step's recorded time is 0: want the time since the recording started")
			}
			if rep.Fixture.Steps != 5 || len(rep.Fixture.SHA256) != 64 || rep.Builds.New.SHA256 == "" || !strings.HasPrefix(rep.Builds.Old.Version, "redis 7.0") {
				t.Errorf("report identity: %+v %+v", rep.Fixture, rep.Builds)
			}
		})
	}
}

func TestTooNarrowToVary(t *testing.T) {
	t.Parallel()
	// ECHO boom crashes the old build: one step, one argument. The correct
	// fix passes, but few variants can reproduce: unverified, not fixed.
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.EchoOld)...)
	out := filepath.Join(t.TempDir(), "echo.kavach")
	if err := incidents.Record(out, old, incidents.Echo); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	rep := diff(t, fx, old, redisbuild.MustBuild(t), 10)
	v := rep.Evidence.Variants
	if want := fmt.Sprintf("unverified(variants: %d of %d reproduce, need 10)", v.Reproducing, v.Generated); rep.Verdict != want || v.Reproducing >= 10 {
		t.Fatalf("verdict %s, want %s with fewer than 10 reproducing", rep.Verdict, want)
	}
}

func TestOneSeedOneSetOfVariants(t *testing.T) {
	t.Parallel()
	b := getBuilds(t)
	fx := recordIncident(t, b.old)
	list := func(seed uint64) []string {
		c := redis.Integration{}
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: b.old}, kavach.Launch{Path: b.pristine},
			grade.Options{Integration: c, MinVariants: 10, Variants: 16, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range rep.Evidence.Variants.List {
			out = append(out, fmt.Sprintf("%d %s kept=%v", v.K, v.Description, v.Kept))
		}
		return out
	}
	a, again, other := list(3), list(3), list(4)
	if !slices.Equal(a, again) {
		t.Errorf("seed 3 twice gave different variants:\n%v\n%v", a, again)
	}
	if slices.Equal(a, other) {
		t.Error("seeds 3 and 4 gave the same variants")
	}
}

func TestDeriveHeadlineOrder(t *testing.T) {
	t.Parallel()
	// The headline is the earliest finding by step; at one step diverged
	// comes before still_failing before invariant_violated; a variant only
	// when the fixture's own replay found nothing.
	crash := kavach.Outcome{Kind: kavach.Crash}
	ok := kavach.Outcome{Kind: kavach.OK}
	base := func() grade.Evidence {
		return grade.Evidence{
			Failure: kavach.Failure{Step: 3, Oracle: kavach.Oracle{Kind: kavach.Crash}, Signature: "crash"},
			Old: grade.OldEvidence{Steps: []grade.StepEvidence{
				{Step: 1, Ran: true, Recorded: ok, Outcome: ok}, {Step: 2, Ran: true, Recorded: ok, Outcome: ok}, {Step: 3, Ran: true, Recorded: crash, Outcome: crash}}},
			New: grade.NewEvidence{Steps: []grade.StepEvidence{
				{Step: 1, Ran: true, Recorded: ok, Outcome: ok}, {Step: 2, Ran: true, Recorded: ok, Outcome: ok}, {Step: 3, Ran: true, Recorded: crash, Outcome: ok}}},
			Variants: grade.VariantsEvidence{Min: 1, Generated: 2, Reproducing: 2,
				List: []grade.VariantEvidence{{K: 1, Kept: true}, {K: 2, Kept: true}}},
		}
	}
	for _, tc := range []struct {
		why  string
		edit func(*grade.Evidence)
		want string
	}{
		{"all checks pass", func(*grade.Evidence) {}, "fixed"},
		{"thin evidence", func(e *grade.Evidence) { e.Variants.Min = 3 }, "unverified(variants: 2 of 2 reproduce, need 3)"},
		{"a variant fails", func(e *grade.Evidence) { e.Variants.List[1].FailedStep = 3 }, "variant_failed(2)@3"},
		{"lowest K first", func(e *grade.Evidence) { e.Variants.List[1].FailedStep = 2; e.Variants.List[0].FailedStep = 3 }, "variant_failed(1)@3"},
		{"the fixture's findings come before variants", func(e *grade.Evidence) {
			e.Variants.List[0].FailedStep = 1
			e.New.Steps[2].Outcome = crash
		}, "still_failing@3"},
		{"earliest step first", func(e *grade.Evidence) {
			e.New.Steps[2].Outcome = crash
			e.New.Steps[1].Diffs = []replay.Diff{{Step: 2, Path: "reply[0]", Want: "1", Got: "2"}}
		}, "diverged@2"},
		{"a difference at a step of an order not known is that, not a regression", func(e *grade.Evidence) {
			e.New.Steps[1].Diffs = []replay.Diff{{Step: 2, Path: "reply[0]", Want: "1", Got: "2"}}
			e.OrderUnknown = []int{2}
		}, "unverified(order-unknown: step 2 differs from the recording on the new build, and it may read what another client wrote in an order the recording could not know (kavach show lists the writes of other clients))"},
		{"noise at a step of an order not known is not noise", func(e *grade.Evidence) {
			e.Noise = []replay.NoiseField{{Step: 2, Path: "reply[0]"}}
			e.OrderUnknown = []int{1, 2}
		}, "unverified(order-unknown: step 2 differs from the recording on the old build's replays, and it may read what another client wrote in an order the recording could not know (kavach show lists the writes of other clients))"},
		{"a step of an order not known that agrees is graded", func(e *grade.Evidence) {
			e.OrderUnknown = []int{2}
		}, "fixed"},
		{"another client's write is not compared", func(e *grade.Evidence) {
			e.Old.Steps[1].Foreign, e.New.Steps[1].Foreign = true, true
			e.Old.Steps[1].Outcome, e.New.Steps[1].Outcome = kavach.Outcome{Kind: kavach.Hang}, kavach.Outcome{Kind: kavach.Hang}
			e.New.Steps[1].Diffs = []replay.Diff{{Step: 2, Path: "reply[0]", Want: "1", Got: "2"}}
		}, "fixed"},
		{"noise does not count", func(e *grade.Evidence) {
			e.New.Steps[1].Diffs = []replay.Diff{{Step: 2, Path: "reply[0][1]", Want: "1", Got: "2"}}
			e.Noise = []replay.NoiseField{{Step: 2, Path: "reply[0]"}}
		}, "fixed"},
		{"invariant after a divergence at the same step", func(e *grade.Evidence) {
			e.Invariants = []grade.InvariantEvidence{{Name: "ttl", FirstStep: 2}}
			e.New.Steps[1].Diffs = []replay.Diff{{Step: 2, Path: "reply[0]", Want: "1", Got: "2"}}
		}, "diverged@2"},
		{"invariant alone", func(e *grade.Evidence) {
			e.Invariants = []grade.InvariantEvidence{{Name: "ttl", FirstStep: 2}}
		}, "invariant_violated(ttl)@2"},
		{"the failure moved later", func(e *grade.Evidence) {
			e.New.Steps = append(e.New.Steps, grade.StepEvidence{Step: 4, Ran: true, Outcome: crash})
		}, "still_failing@4"},
		{"an invariant failure at another step is that invariant violated", func(e *grade.Evidence) {
			e.Failure = kavach.Failure{Step: 3, Oracle: kavach.Oracle{Invariant: "inv"}, Signature: "invariant:inv"}
			e.Old.Steps[2].Outcome, e.Old.Steps[2].Violated = ok, []string{"inv"}
			e.New.Steps = append(e.New.Steps, grade.StepEvidence{Step: 4, Ran: true, Outcome: ok, Violated: []string{"inv"}})
			e.Invariants = []grade.InvariantEvidence{{Name: "inv", FirstStep: 4}}
		}, "invariant_violated(inv)@4"},
		{"an invariant failure at its own step still fails", func(e *grade.Evidence) {
			e.Failure = kavach.Failure{Step: 3, Oracle: kavach.Oracle{Invariant: "inv"}, Signature: "invariant:inv"}
			e.Old.Steps[2].Outcome, e.Old.Steps[2].Violated = ok, []string{"inv"}
			e.New.Steps[2].Violated = []string{"inv"}
			e.Invariants = []grade.InvariantEvidence{{Name: "inv", FirstStep: 3}}
		}, "still_failing@3"},
		{"old build does not violate the invariant", func(e *grade.Evidence) {
			e.Failure = kavach.Failure{Step: 3, Oracle: kavach.Oracle{Invariant: "inv"}, Signature: "invariant:inv"}
			e.Old.Steps[2].Outcome = ok
		}, "unverified(not-reproduced: step 3 gave no violation of inv on the old build, recorded invariant:inv)"},
		{"old build does not reproduce", func(e *grade.Evidence) { e.Old.Steps[2].Outcome = ok },
			"unverified(not-reproduced: step 3 gave ok on the old build, recorded crash)"},
		{"old build differs before the failure", func(e *grade.Evidence) {
			e.Old.Steps[1].Outcome = kavach.Outcome{Kind: kavach.Error, Class: "ERR"}
		}, "unverified(not-reproduced: step 2 gave error:ERR on the old build, recorded ok)"},
	} {
		ev := base()
		tc.edit(&ev)
		if got, _ := grade.Derive(ev); got.String() != tc.want {
			t.Errorf("%s: Derive = %s, want %s", tc.why, got, tc.want)
		}
	}
}

func TestWrongAnswerOnlyAnInvariantSees(t *testing.T) {
	t.Parallel()
	// The old build counts long strings one short: no crash, no error.
	// The incident's failure is the invariant strlen-matches at step 6.
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenOld)...)
	out := filepath.Join(t.TempDir(), "strlen.kavach")
	if err := incidents.RecordStrlen(out, old); err != nil {
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
	grade := func(new string) *grade.Report {
		t.Helper()
		c := redis.Integration{}
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
			grade.Options{Integration: c, MinVariants: 10, Variants: 64, Seed: 1, Memo: gradetest.OldReplays, Invariants: set})
		if err != nil {
			t.Fatal(err)
		}
		if parts, _ := grade.Derive(rep.Evidence); parts.String() != rep.Verdict {
			t.Errorf("evidence gives %s, verdict %s", parts, rep.Verdict)
		}
		return rep
	}

	fixed := grade(redisbuild.MustBuild(t))
	if fixed.Verdict != "fixed" || fixed.Evidence.Variants.Reproducing < 10 {
		t.Fatalf("correct fix: %s with %d variants reproducing through the invariant; findings %+v",
			fixed.Verdict, fixed.Evidence.Variants.Reproducing, fixed.Findings)
	}

	// Planted fault: the old build itself. The invariant still fails at step 6.
	if rep := grade(old); rep.Verdict != "still_failing@6" {
		t.Errorf("old build as the fix: %s, want still_failing@6", rep.Verdict)
	}

	// Planted fault: long strings fixed, short ones now off by one. Step 8
	// (after the failure, on a key no changed step touched) answers
	// differently from the recording, and breaks the invariant: diverged
	// first at its step, the invariant a finding too.
	moved := grade(redisbuild.MustBuild(t, incidents.PatchPaths(incidents.StrlenShortWrong)...))
	hasInv := false
	for _, f := range moved.Findings {
		hasInv = hasInv || f.Kind == "invariant_violated" && f.Step == 8 && f.Invariant == "strlen-matches"
	}
	if moved.Verdict != "diverged@8" || !hasInv {
		t.Errorf("candidate moving the wrong answer: %s, want diverged@8 with invariant_violated(strlen-matches)@8 among the findings; findings %+v", moved.Verdict, moved.Findings)
	}
}

func TestDeriveAfterTheFailure(t *testing.T) {
	t.Parallel()
	// Steps after the failing step 2 (an error): 3 reads key a (which the
	// failing step wrote: without WritesKnown, a step writes every key it
	// touches), 4 reads key b. A difference is explained only where the
	// fix explains it: a later step touching a key a changed step wrote.
	ok := kavach.Outcome{Kind: kavach.OK}
	errOut := kavach.Outcome{Kind: kavach.Error, Class: "ERR", Detail: "ERR boom"}
	diff := []replay.Diff{{Step: 4, Path: "reply[0]", Want: `"1"`, Got: `"2"`}}
	base := func() grade.Evidence {
		return grade.Evidence{
			Failure: kavach.Failure{Step: 2, Oracle: kavach.Oracle{Kind: kavach.Error}, Signature: "error:ERR boom"},
			Old: grade.OldEvidence{Steps: []grade.StepEvidence{
				{Step: 1, Ran: true, Recorded: ok, Outcome: ok}, {Step: 2, Ran: true, Recorded: errOut, Outcome: errOut},
				{Step: 3, Ran: true, Recorded: ok, Outcome: ok}, {Step: 4, Ran: true, Recorded: ok, Outcome: ok}}},
			New: grade.NewEvidence{Steps: []grade.StepEvidence{
				{Step: 1, Ran: true, Recorded: ok, Outcome: ok}, {Step: 2, Ran: true, Recorded: errOut, Outcome: ok, Keys: []string{"a"}},
				{Step: 3, Ran: true, Recorded: ok, Outcome: ok, Keys: []string{"a"}}, {Step: 4, Ran: true, Recorded: ok, Outcome: ok, Keys: []string{"b"}}}},
		}
	}
	for _, tc := range []struct {
		why  string
		edit func(*grade.Evidence)
		want string
	}{
		{"nothing differs", func(*grade.Evidence) {}, "fixed"},
		{"a step on the key the failing step wrote", func(e *grade.Evidence) {
			e.New.Steps[2].Diffs = []replay.Diff{{Step: 3, Path: "reply[0]", Want: `"1"`, Got: `"2"`}}
		}, "fixed"},
		{"a step on another key", func(e *grade.Evidence) { e.New.Steps[3].Diffs = diff }, "diverged@4"},
		{"a step on another key, noise", func(e *grade.Evidence) {
			e.New.Steps[3].Diffs = diff
			e.Noise = []replay.NoiseField{{Step: 4, Path: "reply[0]"}}
		}, "fixed"},
		{"unknown keys depend on everything", func(e *grade.Evidence) {
			e.New.Steps[3].Diffs, e.New.Steps[3].Keys, e.New.Steps[3].KeysUnknown = diff, nil, true
		}, "fixed"},
		{"a changed step passes its change on", func(e *grade.Evidence) {
			e.New.Steps[2].Diffs, e.New.Steps[2].Keys = []replay.Diff{{Step: 3, Path: "reply[0]"}}, []string{"a", "b"}
			e.New.Steps[3].Diffs = diff
		}, "fixed"},
		// Writes told from reads (WritesKnown): only what a changed step
		// wrote explains a later step.
		{"a later step on the key the failing step wrote", func(e *grade.Evidence) {
			e.New.Steps[1].Writes, e.New.Steps[1].WritesKnown = []string{"a"}, true
			e.New.Steps[2].Diffs = []replay.Diff{{Step: 3, Path: "reply[0]"}}
		}, "fixed"},
		{"a read-only failing step explains nothing after it", func(e *grade.Evidence) {
			e.New.Steps[1].Writes, e.New.Steps[1].WritesKnown = []string{}, true
			e.New.Steps[2].Diffs = []replay.Diff{{Step: 3, Path: "reply[0]"}}
		}, "diverged@3"},
		{"a read-only failing step explains no step of unknown keys", func(e *grade.Evidence) {
			e.New.Steps[1].Writes, e.New.Steps[1].WritesKnown = []string{}, true
			e.New.Steps[3].Diffs, e.New.Steps[3].Keys, e.New.Steps[3].KeysUnknown = diff, nil, true
		}, "diverged@4"},
		{"a failing step of unknown keys that writes nothing (DBSIZE)", func(e *grade.Evidence) {
			e.New.Steps[1].Keys, e.New.Steps[1].KeysUnknown = nil, true
			e.New.Steps[1].Writes, e.New.Steps[1].WritesKnown = []string{}, true
			e.New.Steps[3].Diffs = diff
		}, "diverged@4"},
		{"a failing step of unknown writes explains everything", func(e *grade.Evidence) {
			e.New.Steps[1].Keys, e.New.Steps[1].KeysUnknown = nil, true
			e.New.Steps[3].Diffs = diff
		}, "fixed"},
		{"a failing step writing another key than the later step reads", func(e *grade.Evidence) {
			e.New.Steps[1].Keys, e.New.Steps[1].Writes, e.New.Steps[1].WritesKnown = []string{"a", "b"}, []string{"b"}, true
			e.New.Steps[2].Diffs = []replay.Diff{{Step: 3, Path: "reply[0]"}}
		}, "diverged@3"},
		{"an explained step that writes passes its writes on", func(e *grade.Evidence) {
			e.New.Steps[1].Writes, e.New.Steps[1].WritesKnown = []string{"a"}, true
			e.New.Steps[2].Diffs, e.New.Steps[2].Keys = []replay.Diff{{Step: 3, Path: "reply[0]"}}, []string{"a", "b"}
			e.New.Steps[2].Writes, e.New.Steps[2].WritesKnown = []string{"b"}, true
			e.New.Steps[3].Diffs = diff
		}, "fixed"},
		{"an explained read passes nothing on", func(e *grade.Evidence) {
			e.New.Steps[1].Writes, e.New.Steps[1].WritesKnown = []string{"a"}, true
			e.New.Steps[2].Diffs, e.New.Steps[2].Keys = []replay.Diff{{Step: 3, Path: "reply[0]"}}, []string{"a", "b"}
			e.New.Steps[2].Writes, e.New.Steps[2].WritesKnown = []string{}, true
			e.New.Steps[3].Diffs = diff
		}, "diverged@4"},
		{"a step the old build failed at passes its writes on", func(e *grade.Evidence) {
			e.New.Steps[1].Writes, e.New.Steps[1].WritesKnown = []string{}, true
			e.Old.Steps[2].Outcome = errOut
			e.New.Steps[2].Diffs, e.New.Steps[2].Keys = []replay.Diff{{Step: 3, Path: "reply[0]"}}, []string{"b"}
			e.New.Steps[2].Writes, e.New.Steps[2].WritesKnown = []string{"b"}, true
			e.New.Steps[3].Diffs = diff
		}, "fixed"},
		{"a write to a path explains a later read below it", func(e *grade.Evidence) {
			e.New.Steps[1].Keys, e.New.Steps[1].Writes, e.New.Steps[1].WritesKnown = []string{"/items"}, []string{"/items"}, true
			e.New.Steps[3].Diffs, e.New.Steps[3].Keys = diff, []string{"/items/2"}
		}, "fixed"},
		{"a read of a path explains no later read below it", func(e *grade.Evidence) {
			e.New.Steps[1].Keys, e.New.Steps[1].Writes, e.New.Steps[1].WritesKnown = []string{"/items"}, []string{}, true
			e.New.Steps[3].Diffs, e.New.Steps[3].Keys = diff, []string{"/items/2"}
		}, "diverged@4"},
		{"the old build showed the failure there", func(e *grade.Evidence) {
			e.New.Steps[3].Diffs = diff
			e.Old.Steps[3].Outcome = errOut
		}, "fixed"},
		{"a crash after the failure", func(e *grade.Evidence) {
			e.New.Steps[3].Outcome = kavach.Outcome{Kind: kavach.Crash}
		}, "diverged@4"},
		{"a hang after the failure", func(e *grade.Evidence) {
			e.New.Steps[3].Outcome = kavach.Outcome{Kind: kavach.Hang}
		}, "diverged@4"},
		{"a hang the recording and the old build show too", func(e *grade.Evidence) {
			hang := kavach.Outcome{Kind: kavach.Hang}
			e.New.Steps[3].Outcome, e.New.Steps[3].Recorded, e.Old.Steps[3].Outcome = hang, hang, hang
		}, "fixed"},
		{"any error at the failing step, by the oracle", func(e *grade.Evidence) {
			e.New.Steps[1].Outcome = kavach.Outcome{Kind: kavach.Error, Class: "ERR", Detail: "ERR other"}
		}, "still_failing@2"},
		{"another error after it is no recurrence", func(e *grade.Evidence) {
			e.New.Steps[3].Outcome = kavach.Outcome{Kind: kavach.Error, Class: "ERR", Detail: "ERR other"}
		}, "fixed"},
		{"not evaluable at the failing step", func(e *grade.Evidence) {
			e.Invariants = []grade.InvariantEvidence{{Name: "inv", Held: true, NotEvaluable: []int{2}, NotEvaluableMessage: "inv: not evaluable: no such overload at step 2"}}
		}, "unverified(not-evaluable: inv: not evaluable: no such overload at step 2)"},
		{"not evaluable at the failing step, and first before it", func(e *grade.Evidence) {
			e.Invariants = []grade.InvariantEvidence{{Name: "inv", Held: true, NotEvaluable: []int{1, 2}, NotEvaluableMessage: "inv: not evaluable: no such overload at step 1"}}
		}, "unverified(not-evaluable: inv: not evaluable at step 2 (first: inv: not evaluable: no such overload at step 1))"},
		{"the invariants' budget ran out", func(e *grade.Evidence) {
			e.Invariants = []grade.InvariantEvidence{{Name: "cheap", Held: true}, {Name: "inv", Held: true, TooCostly: "inv: spent it by step 1"}}
		}, "unverified(invariants-too-costly: inv: spent it by step 1)"},
		{"a violation before the budget ran out", func(e *grade.Evidence) {
			e.Invariants = []grade.InvariantEvidence{{Name: "inv", FirstStep: 1, TooCostly: "inv: spent it by step 1"}}
		}, "invariant_violated(inv)@1"},
		{"not evaluable elsewhere", func(e *grade.Evidence) {
			e.Invariants = []grade.InvariantEvidence{{Name: "inv", Held: true, NotEvaluable: []int{3}}}
		}, "fixed"},
	} {
		ev := base()
		tc.edit(&ev)
		if got, _ := grade.Derive(ev); got.String() != tc.want {
			t.Errorf("%s: Derive = %s, want %s", tc.why, got, tc.want)
		}
	}
}
