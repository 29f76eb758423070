package scenarios_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// recordShop records the shop's realistic session (incidents.Shop) on
// old, checks it is one as users record them (at least 40 steps on at
// least 3 connections), and marks the failure at the step whose request
// is failing, the first such after the step whose request is after
// (none: from the start), with oracle; invariants are embedded when
// given.
func recordShop(t *testing.T, old string, after, failing []string, oracle, invariants string) *fixtures.Fixture {
	t.Helper()
	return recordShopWith(t, old, nil, after, failing, oracle, invariants)
}

// recordShopWith is recordShop with extra sent by the shop's admin
// (incidents.ShopWith).
func recordShopWith(t *testing.T, old string, extra [][]string, after, failing []string, oracle, invariants string) *fixtures.Fixture {
	t.Helper()
	fx, err := incidents.RecordClients(t.TempDir(), old, incidents.ShopWith(extra))
	if err != nil {
		t.Fatal(err)
	}
	steps := kavach.Steps(fx.Events, redis.Integration{})
	conns := map[uint64]bool{}
	from := 0
	n := 0
	for _, s := range steps {
		conns[s.Conn()] = true
		c, err := redis.ParseCommand(s.Request.Data)
		if err != nil {
			continue
		}
		switch {
		case after != nil && from == 0 && sameCommand(c, after):
			from = s.N
		case n == 0 && (after == nil || from > 0) && sameCommand(c, failing):
			n = s.N
		}
	}
	if len(steps) < 40 || len(conns) < 3 || n == 0 {
		t.Fatalf("shop: %d steps on %d connections, failing step %d: want at least 40 on 3, and %q", len(steps), len(conns), n, failing)
	}
	if invariants != "" {
		if err := fixtures.Amend(fx.Path, fixtures.Amendment{Invariants: &fixtures.Invariants{Name: "shop.invariants", Source: invariants}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := incidents.MarkFailure(fx.Path, n, oracle); err != nil {
		t.Fatal(err)
	}
	if fx, err = fixtures.Load(fx.Path); err != nil {
		t.Fatal(err)
	}
	return fx
}

func sameCommand(c redis.Command, args []string) bool {
	if len(c.Args) != len(args) {
		return false
	}
	for i, a := range c.Args {
		if string(a) != args[i] && (i > 0 || !strings.EqualFold(string(a), args[i])) {
			return false
		}
	}
	return true
}

// shopShape is a planted shape recorded inside the shop's session: the
// old build's patches and the wrong fix's (the correct fix is the
// pristine build), the failing request (the first after the request
// after, when given), its oracle and invariants, and the kind that alone
// catches the wrong fix.
type shopShape struct {
	old, wrong        []string
	after, failing    []string
	oracle, invariant string
	kind              string
}

// check records the shape inside the shop and grades it with the
// default options: the correct fix fixed, the wrong fix variant_failed
// through the kind alone, fixed with the kind excluded (checkCaughtBy).
func (s shopShape) check(t *testing.T) {
	t.Helper()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(s.old)...)
	fixed := redisbuild.MustBuild(t)
	wrong := redisbuild.MustBuild(t, incidents.PatchPaths(s.wrong)...)
	fx := recordShop(t, old, s.after, s.failing, s.oracle, s.invariant)
	opts := grade.Options{Integration: redis.Integration{}}
	if s.invariant != "" {
		opts.Invariants = gradetest.ParseSet(t, s.invariant)
	}
	checkCaughtBy(t, s.kind, func(new kavach.Launch, exclude bool) *grade.Report {
		return gradeKind(t, fx, kavach.Launch{Path: old}, new, opts, s.kind, exclude)
	}, kavach.Launch{Path: fixed}, kavach.Launch{Path: wrong})
}

// Item 1 inside a realistic recording: the hash decrement stored twice,
// by HINCRBY and HINCRBYFLOAT, seen by the shop's invariant at the web's
// HGET after the worker's HINCRBY -3, among a restock script, a woken
// worker and three connections' traffic. The wrong fix mends HINCRBY
// only; the writer's sibling (HINCRBYFLOAT of the worker's decrement)
// catches it with the default options, and nothing else does.
func TestRealisticShopWriterSibling(t *testing.T) {
	t.Parallel()
	shopShape{old: incidents.HashDecrementOld, wrong: incidents.HashDecrementHincrbyOnly,
		after: []string{"HINCRBY", "stock", "apples", "-3"}, failing: []string{"HGET", "stock", "apples"},
		oracle: "invariant:hash-increment-reads-back", invariant: incidents.ShopInvariants, kind: "sibling"}.check(t)
}

// Item 2 inside a realistic recording: a blocked pop woken short of its
// COUNT is refused, on lists and on sorted sets; the recording is the
// shop's, whose worker's BLMPOP is woken by the web's RPUSH of two jobs.
// The wrong fix mends lists only; the BZMPOP sibling with its scenario
// (the web's push as a ZADD of its key) catches it with the default
// options, and nothing else does.
func TestRealisticShopWokenSibling(t *testing.T) {
	t.Parallel()
	shopShape{old: incidents.WokenRefusesBoth, wrong: incidents.WokenFixListsOnly,
		failing: []string{"BLMPOP", "0", "1", "jobs", "LEFT", "COUNT", "5"}, oracle: "error", kind: "sibling"}.check(t)
}

// Item 3 inside a realistic recording: a negative double reply refused
// in both protocols, seen at the web's ZINCRBY board -30 ann (RESP2, as
// go-redis spoke it). The wrong fix mends RESP2 only; the variant on the
// web's connection turned to RESP3 (HELLO 3) catches it with the default
// options, and nothing else does.
func TestRealisticShopModes(t *testing.T) {
	t.Parallel()
	shopShape{old: incidents.ModesOld, wrong: incidents.ModesResp2Only,
		failing: []string{"ZINCRBY", "board", "-30", "ann"}, oracle: "error", kind: "mode"}.check(t)
}

// Item 4 inside a realistic recording: the old build checks SETRANGE's
// offset after the key (a missing key's SETRANGE banner abc x is
// answered: the invariant sees it) and the type before the arguments in
// GETRANGE and LRANGE. The correct fix reads the arguments first in
// SETRANGE and GETRANGE (one COMMAND DOCS group, string): the admin's
// later GETRANGE of the log (a list), refused WRONGTYPE then ERR, is a
// changed refusal the build's docs explain, and the diff is fixed with
// the default options. A fix that also changes LRANGE (group list) is
// diverged there; the correct fix graded without the build's group is
// diverged at the GETRANGE.
func TestRealisticShopChangedRefusal(t *testing.T) {
	t.Parallel()
	old := afterBuild(t, []string{"setrange-offset-late.patch", "getrange-type-first.patch", "lrange-type-first.patch"})
	correct := afterBuild(t, []string{"lrange-type-first.patch"})
	wrong := redisbuild.MustBuild(t)
	fx := recordShop(t, old, nil, []string{"SETRANGE", "banner", "abc", "x"}, "invariant:setrange-offset-integer", incidents.ShopSetrangeInvariants)
	set := gradetest.ParseSet(t, incidents.ShopSetrangeInvariants)
	getrange := stepOf(t, fx, "GETRANGE", "log", "abc", "x")
	lrange := stepOf(t, fx, "LRANGE", "config:currency", "abc", "x")
	grade := func(c kavach.Integration, new string) *grade.Report {
		t.Helper()
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
			grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1, Memo: gradetest.OldReplays, Invariants: set})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := grade(redis.Integration{}, correct); rep.Verdict != "fixed" || explainedAs(rep, getrange) != "changed-refusal" {
		t.Errorf("correct fix: %s, GETRANGE of the list explained as %q, want fixed and changed-refusal; findings %+v", rep.Verdict, explainedAs(rep, getrange), rep.Findings)
	}
	if rep := grade(redis.Integration{}, wrong); rep.Verdict != "diverged@"+itoa(lrange) {
		t.Errorf("fix that also changes LRANGE: %s, want diverged@%d; findings %+v", rep.Verdict, lrange, rep.Findings)
	}
	if rep := grade(noGroup{}, correct); rep.Verdict != "diverged@"+itoa(getrange) {
		t.Errorf("correct fix, the build not asked for its group: %s, want diverged@%d", rep.Verdict, getrange)
	}
}

// The last round's planted shapes, each re-recorded inside the shop's
// traffic (its requests sent by the admin after the shop opens; the
// wake-up shape is the shop's own worker) rather than alone: the correct
// fix fixed, the wrong fix variant_failed through the shape's kind alone
// with the default options, fixed with that kind excluded.
func TestRealisticShopLastRoundShapes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name              string
		old, fixed, wrong []string // patches; fixed nil: the pristine build
		extra             [][]string
		failing           []string
		kind              string
		budget            int // 0: the default
	}{
		{"script-site", incidents.ScriptsOld, nil, incidents.ScriptsNarrow, incidents.ScriptHincrby, incidents.ScriptHincrby[3], "script-site", 0},
		{"runner", incidents.ScriptsOld, incidents.ScriptsArgvFixed, incidents.ScriptsEvalOnly, incidents.ScriptEmptyArg, incidents.ScriptEmptyArg[2], "runner", 0},
		{"runner-fcall", incidents.ScriptsOld, incidents.ScriptsArgvFixed, incidents.ScriptsFcallOnly, incidents.ScriptFcall, incidents.ScriptFcall[3], "runner", 0},
		{"number-form", incidents.ValuesOld, nil, incidents.ValuesNarrow, incidents.IncrbyFloat, incidents.IncrbyFloat[3], "number-form", 0},
		{"structured", incidents.ValuesOld, nil, incidents.ValuesNarrow, incidents.StreamID, incidents.StreamID[2], "structured", 0},
		{"writer-value", incidents.WritersOld, incidents.StreamGapFixed, incidents.WritersWrong, incidents.StreamGap, incidents.StreamGap[4], "writer-value", 0},
		{"read-back", incidents.WritersOld, nil, incidents.WritersWrong, incidents.FloatReadBack, incidents.FloatReadBack[4], "read-back", 0},
		{"transplant", incidents.SafeIntegerOld, nil, incidents.SafeIntegerExpireOnly, incidents.SafeInteger, incidents.SafeInteger[4], "transplant", 0},
		{"wakeup", incidents.WokenRefuses, nil, incidents.WokenTakesAll, nil, []string{"BLMPOP", "0", "1", "jobs", "LEFT", "COUNT", "5"}, "wakeup", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			old := redisbuild.MustBuild(t, incidents.PatchPaths(c.old)...)
			fixed := redisbuild.MustBuild(t, incidents.PatchPaths(c.fixed)...)
			wrong := redisbuild.MustBuild(t, incidents.PatchPaths(c.wrong)...)
			fx := recordShopWith(t, old, c.extra, nil, c.failing, "error", "")
			opts := grade.Options{Integration: redis.Integration{}, Variants: c.budget}
			checkCaughtAmong(t, c.kind, func(new kavach.Launch) *grade.Report {
				return gradeKind(t, fx, kavach.Launch{Path: old}, new, opts, c.kind, false)
			}, kavach.Launch{Path: fixed}, kavach.Launch{Path: wrong})
		})
	}
}

// checkCaughtAmong checks a shape inside traffic: the correct fix fixed,
// the wrong fix variant_failed with a variant of kind among those that
// failed it. Inside more traffic, other kinds may see the fault too (the
// shape alone proves kind alone catches it).
func checkCaughtAmong(t *testing.T, kind string, run func(new kavach.Launch) *grade.Report, fixed, wrong kavach.Launch) {
	t.Helper()
	rep := run(fixed)
	if rep.Verdict != "fixed" {
		for _, v := range rep.Evidence.Variants.List {
			if v.FailedStep > 0 {
				t.Logf("correct fix: variant %d (%s, %s) failed at step %d: old %+v, new %+v, diffs %+v", v.K, v.Kind, v.Description, v.FailedStep, v.OldOutcome, v.NewOutcome, v.Diffs)
			}
		}
		t.Fatalf("correct fix: %s, want fixed; findings %+v", rep.Verdict, rep.Findings)
	}
	bad := run(wrong)
	caught := map[string]int{}
	for _, v := range bad.Evidence.Variants.List {
		if v.FailedStep > 0 {
			caught[v.Kind]++
		}
	}
	if !strings.HasPrefix(bad.Verdict, "variant_failed(") || caught[kind] == 0 {
		for _, v := range bad.Evidence.Variants.List {
			if v.Kind == kind {
				t.Logf("wrong fix: variant %d (%s): %s: %s", v.K, v.Kind, v.Description, v.Result())
			}
		}
		t.Errorf("wrong fix: %s, variants failed by kind %v; want variant_failed with %s among them; generated by kind %+v",
			bad.Verdict, caught, kind, bad.Evidence.Variants.ByKind)
	}
	t.Logf("wrong fix: %s, variants failed by kind %v", bad.Verdict, caught)
}
