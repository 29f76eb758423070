package scenarios_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/gradetest"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/loadtest"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/invariants"
)

// The tests below are the three shapes of a correct fix whose effect
// shows after the failure (docs/diff.md, "After the failure"), made-up
// traffic on planted faults of our own, recorded with stock clients
// (redis-cli, go-redis). Each correct fix is fixed, with the step that
// the inferred rule called diverged now explained by what was observed;
// each wrong fix is red for a reason of its own.

// afterPatches are the planted faults, relative to internal/redisbuild/testdata.
var (
	setrangeLate     = []string{"setrange-offset-late.patch"}         // the offset read leniently on a missing key, after the type check on others
	setrangeRefuses  = []string{"setrange-fix-refuses-missing.patch"} // wrong: every missing key refused
	setrangeExisting = []string{"setrange-fix-breaks-existing.patch"} // wrong: a write inside an existing string answers too long a length
	lmpopPast        = []string{"lmpop-past-keys.patch"}              // LMPOP looks one past its keys: at its direction token
	lmpopWithCount   = []string{"lmpop-fix-with-count.patch"}         // narrow: fixed only where COUNT is given
	touchNoAccess    = []string{"touch-no-access.patch"}              // TOUCH does not update the access time
	touchMiscount    = []string{"touch-fix-miscount.patch"}           // wrong: TOUCH counts the keys asked
)

func afterBuild(t *testing.T, patches []string) string {
	t.Helper()
	return redisbuild.MustBuild(t, incidents.PatchPaths(patches)...)
}

// stepOf is the number of the fixture's step whose request is args.
func stepOf(t *testing.T, fx *fixtures.Fixture, args ...string) int {
	t.Helper()
	for _, s := range kavach.Steps(fx.Events, redis.Integration{}) {
		c, err := redis.ParseCommand(s.Request.Data)
		if err != nil || len(c.Args) != len(args) {
			continue
		}
		same := true
		for i, a := range c.Args {
			// Command names in any case (go-redis sends them lower).
			same = same && (string(a) == args[i] || i == 0 && strings.EqualFold(string(a), args[i]))
		}
		if same {
			return s.N
		}
	}
	t.Fatalf("no step %q in %s", args, fx.Path)
	return 0
}

// recordCli records session with the stock redis-cli on old, marks the
// step whose request is failing with oracle, and loads the fixture.
func recordCli(t *testing.T, old string, session [][]string, failing []string, oracle string) *fixtures.Fixture {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli (the stock client, Debian's redis-tools) is needed: %v", err)
	}
	out := filepath.Join(t.TempDir(), "after.kavach")
	if err := incidents.RecordWithRedisCli(out, old, cli, session); err != nil {
		t.Fatal(err)
	}
	return markAt(t, out, failing, oracle)
}

func markAt(t *testing.T, path string, failing []string, oracle string) *fixtures.Fixture {
	t.Helper()
	fx, err := fixtures.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := incidents.MarkFailure(path, stepOf(t, fx, failing...), oracle); err != nil {
		t.Fatal(err)
	}
	if fx, err = fixtures.Load(path); err != nil {
		t.Fatal(err)
	}
	return fx
}

// gradeAfter grades new against fx with set, and checks that the report's
// evidence gives its verdict and its explained steps again.
func gradeAfter(t *testing.T, fx *fixtures.Fixture, old, new string, set *invariants.Set, variants int) *grade.Report {
	t.Helper()
	c := redis.Integration{}
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
		grade.Options{Integration: c, Seed: 1,
			Variants: variants, MinVariants: min(10, variants), Invariants: set})
	if err != nil {
		t.Fatal(err)
	}
	back := gradetest.ReadBack(t, rep)
	if a, b := reasons(grade.Explain(back.Evidence)), reasons(rep.Explained); !slices.Equal(a, b) {
		t.Errorf("the report's evidence explains %v, the report lists %v", a, b)
	}
	if rep.Evidence.Inputs != grade.RuleObserved {
		t.Errorf("steps after the failure judged by %q, want %q", rep.Evidence.Inputs, grade.RuleObserved)
	}
	return rep
}

func reasons(ex []grade.Explained) []string {
	var out []string
	for _, e := range ex {
		out = append(out, e.Reason+"@"+itoa(e.Step))
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// explainedAs reports the reason step n is explained for in rep, or "".
func explainedAs(rep *grade.Report, n int) string {
	for _, e := range rep.Explained {
		if e.Step == n {
			return e.Reason
		}
	}
	return ""
}

// afterCase is one candidate of a shape: its build's patches (nil: the
// pristine source, the correct fix), the variant budget, the verdict
// wanted (a prefix when it ends in "("), and what else to check.
type afterCase struct {
	name     string
	patches  []string
	variants int
	want     string
	check    func(t *testing.T, rep *grade.Report)
}

// afterShape is a recorded shape with its candidates.
type afterShape struct {
	fx    *fixtures.Fixture
	set   *invariants.Set
	old   string
	cases []afterCase
}

func (sh afterShape) grade(t *testing.T, c afterCase) *grade.Report {
	t.Helper()
	build := redisbuild.MustBuild(t)
	if c.patches != nil {
		build = afterBuild(t, c.patches)
	}
	rep := gradeAfter(t, sh.fx, sh.old, build, sh.set, c.variants)
	if rep.Verdict != c.want && !(strings.HasSuffix(c.want, "(") && strings.HasPrefix(rep.Verdict, c.want)) {
		var errs []string
		for _, s := range rep.Evidence.New.Steps {
			if s.InputsError != "" {
				errs = append(errs, itoa(s.Step)+": "+s.InputsError)
			}
		}
		t.Fatalf("%s: %s, want %s; findings %+v; explained %+v; after the failure judged by %q, probe errors %q", c.name, rep.Verdict, c.want, rep.Findings, rep.Explained, rep.Evidence.Inputs, errs)
	}
	return rep
}

func (sh afterShape) run(t *testing.T) {
	for _, c := range sh.cases {
		rep := sh.grade(t, c)
		if c.check != nil {
			c.check(t, rep)
		}
	}
}

// Shape 1: the fix validates earlier, which changes the error a later
// request of the failing command gets. The old build reads SETRANGE's
// offset leniently on a missing key (answers) and checks the type first
// on an existing one (WRONGTYPE); the fix checks the offset first
// (ERR not an integer) everywhere.
func changedRefusal(t *testing.T) afterShape {
	old := afterBuild(t, setrangeLate)
	session := [][]string{
		{"SET", "greeting", "hello"},
		{"RPUSH", "list:k", "a", "b"},
		{"SETRANGE", "k", "abc", "x"}, // the failure: answered on a missing key
		{"GET", "k"},                  // the key the old build made: inputs differ
		{"SETRANGE", "list:k", "abc", "x"},
		{"SETRANGE", "fresh", "0", "hi"},
		{"SET", "k", "hello"},
		{"SETRANGE", "k", "1", "EE"},
		{"GET", "k"},
	}
	set := gradetest.ParseSet(t, `name: setrange-offset-integer
description: SETRANGE refuses an offset that is not an integer
when: req.command == "SETRANGE" && !req.args[1].matches("^-?[0-9]+$")
check: outcome.startsWith("error:")
`)
	fx := recordCli(t, old, session, []string{"SETRANGE", "k", "abc", "x"}, "invariant:setrange-offset-integer")
	getK := stepOf(t, fx, "GET", "k")
	refusal := stepOf(t, fx, "SETRANGE", "list:k", "abc", "x")
	fresh := stepOf(t, fx, "SETRANGE", "fresh", "0", "hi")
	into := stepOf(t, fx, "SETRANGE", "k", "1", "EE")
	return afterShape{fx: fx, set: set, old: old, cases: []afterCase{
		{name: "correct fix", want: "fixed", check: func(t *testing.T, rep *grade.Report) {
			if r := explainedAs(rep, refusal); r != grade.ReasonRefusal {
				t.Errorf("SETRANGE on the list (WRONGTYPE then ERR): explained as %q, want %s; explained %+v", r, grade.ReasonRefusal, rep.Explained)
			}
			if r := explainedAs(rep, getK); r != grade.ReasonInputs {
				t.Errorf("GET of the key the old build made: explained as %q, want %s", r, grade.ReasonInputs)
			}
		}},
		// Wrong: every SETRANGE on a missing key refused. A later valid
		// one, on a key missing on both builds, is refused where the old
		// build answered: a failure of its own.
		{name: "fix refusing every missing key", patches: setrangeRefuses, want: "diverged@" + itoa(fresh)},
		// The guard: the fix right, but a write into an existing string
		// answers too long a length. The failing command on the failing key, whose
		// content is the same on both builds by then: the same inputs,
		// another answer.
		{name: "fix breaking SETRANGE into an existing string", patches: setrangeExisting, want: "diverged@" + itoa(into),
			check: func(t *testing.T, rep *grade.Report) {
				if f := rep.Findings[0]; f.Rule != grade.RuleObserved || len(f.Inputs) == 0 {
					t.Errorf("the finding names rule %q and inputs %v, want the observed rule and the equal fingerprint", f.Rule, f.Inputs)
				}
			}},
	}}
}

func TestAfterChangedRefusal(t *testing.T) { changedRefusal(t).run(t) }

// noGroup is the Redis integration without kavach.Abilities.Group: the
// changed-refusal rule reaches the family table's commands alone, as it
// did before the build was asked.
type noGroup struct{ redis.Integration }

func (n noGroup) Abilities() kavach.Abilities {
	ab := n.Integration.Abilities()
	ab.Group = nil
	return ab
}

// TestAfterChangedRefusalInGroup: the old build checks the type before the
// arguments in SETRANGE, GETRANGE and LRANGE; the correct fix reads the
// arguments first in SETRANGE (the failure) and in GETRANGE, the family
// table's outsider from the same COMMAND DOCS group (string): both builds
// refuse GETRANGE on a list, WRONGTYPE then ERR, a changed refusal the
// build's own docs tie to the failing command. The reach is the group's:
// a fix that also changes LRANGE (group list) is diverged there; the
// correct fix graded without asking the build for the group is diverged
// at GETRANGE, which proves the build's answer decided it.
func TestAfterChangedRefusalInGroup(t *testing.T) {
	old := afterBuild(t, []string{"setrange-offset-late.patch", "getrange-type-first.patch", "lrange-type-first.patch"})
	session := [][]string{
		{"SET", "greeting", "hello"},
		{"RPUSH", "list:k", "a", "b"},
		{"SETRANGE", "k", "abc", "x"}, // the failure: answered on a missing key
		{"SETRANGE", "list:k", "abc", "x"},
		{"GETRANGE", "list:k", "abc", "x"},
		{"LRANGE", "greeting", "abc", "x"},
		{"GETRANGE", "greeting", "0", "2"},
	}
	set := gradetest.ParseSet(t, `name: setrange-offset-integer
description: SETRANGE refuses an offset that is not an integer
when: req.command == "SETRANGE" && !req.args[1].matches("^-?[0-9]+$")
check: outcome.startsWith("error:")
`)
	fx := recordCli(t, old, session, []string{"SETRANGE", "k", "abc", "x"}, "invariant:setrange-offset-integer")
	getrange := stepOf(t, fx, "GETRANGE", "list:k", "abc", "x")
	lrange := stepOf(t, fx, "LRANGE", "greeting", "abc", "x")
	correct := afterBuild(t, []string{"lrange-type-first.patch"})
	rep := gradeAfter(t, fx, old, correct, set, 0)
	if rep.Verdict != "fixed" || explainedAs(rep, getrange) != grade.ReasonRefusal {
		t.Fatalf("correct fix: %s, GETRANGE on the list explained as %q, want fixed and %s; findings %+v",
			rep.Verdict, explainedAs(rep, getrange), grade.ReasonRefusal, rep.Findings)
	}
	if rep.Evidence.FailureGroup != "string" || !slices.Contains(rep.Evidence.FailureFamily, "GETRANGE") {
		t.Errorf("the failing command's group %q, family %v: want string, with GETRANGE", rep.Evidence.FailureGroup, rep.Evidence.FailureFamily)
	}
	if rep := gradeAfter(t, fx, old, redisbuild.MustBuild(t), set, 0); rep.Verdict != "diverged@"+itoa(lrange) {
		t.Errorf("fix that also changes LRANGE's refusal: %s, want diverged@%d; explained %+v", rep.Verdict, lrange, rep.Explained)
	}
	c := noGroup{}
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: correct},
		grade.Options{Integration: c, Seed: 1, Invariants: set})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "diverged@"+itoa(getrange) {
		t.Errorf("correct fix, the build not asked for the group: %s, want diverged@%d (the family table alone does not reach GETRANGE)", rep.Verdict, getrange)
	}
}

// Shape 2: the bug is that the failing request touched a name it should
// not have. LMPOP on an empty list looks one past its keys, at its
// direction token, and pops the list named LEFT. Key specs say its only
// key is jobs; the fingerprint of LEFT says the builds hold different
// lists there.
func touchedAnotherName(t *testing.T) afterShape {
	old := afterBuild(t, lmpopPast)
	session := [][]string{
		{"RPUSH", "LEFT", "a", "b", "c"},
		{"RPUSH", "other", "x"},
		{"LMPOP", "1", "jobs", "LEFT", "COUNT", "5"}, // the failure: pops LEFT
		{"LLEN", "LEFT"},
		{"LLEN", "other"},
		{"LPUSH", "jobs", "j1"},
		{"LMPOP", "1", "jobs", "LEFT"},
		{"LRANGE", "LEFT", "0", "-1"},
	}
	set := gradetest.ParseSet(t, `name: lmpop-pops-its-keys
description: LMPOP of one key pops that key or nothing
when: req.command == "LMPOP" && req.args[0] == "1"
check: reply == null || reply[0] == req.args[1]
`)
	fx := recordCli(t, old, session, []string{"LMPOP", "1", "jobs", "LEFT", "COUNT", "5"}, "invariant:lmpop-pops-its-keys")
	llen := stepOf(t, fx, "LLEN", "LEFT")
	lrange := stepOf(t, fx, "LRANGE", "LEFT", "0", "-1")
	return afterShape{fx: fx, set: set, old: old, cases: []afterCase{
		{name: "correct fix", variants: 64, want: "fixed", check: func(t *testing.T, rep *grade.Report) {
			for _, n := range []int{llen, lrange} {
				if r := explainedAs(rep, n); r != grade.ReasonInputs {
					t.Errorf("step %d reads LEFT, which the old build popped: explained as %q, want %s; explained %+v", n, r, grade.ReasonInputs, rep.Explained)
				}
			}
		}},
		// Narrow: fixed where COUNT is given. The incident passes; the
		// variant that drops the optional COUNT still pops LEFT.
		{name: "fix made where COUNT is given only", patches: lmpopWithCount, variants: 64, want: "variant_failed("},
	}}
}

func TestAfterTouchedAnotherName(t *testing.T) { touchedAnotherName(t).run(t) }

// Shape 3: the fix changes state through a step whose answer does not
// change. TOUCH answers 1 on both builds, but only the fixed one updates
// the key's access time; OBJECT IDLETIME shows it (the failure), and a
// later script that reads the idle time answers "hot" where the
// recording said "cold". Recorded with go-redis, with real seconds of
// idle time between the writes and the reads.
func stateChangedSilently(t *testing.T) afterShape {
	old := afterBuild(t, touchNoAccess)
	const script = "if redis.call('OBJECT', 'IDLETIME', KEYS[1]) < 2 then return 'hot' else return 'cold' end"
	fx, err := incidents.RecordClients(t.TempDir(), old, func(addr string) error {
		ctx := context.Background()
		c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 1, Protocol: 2, ReadTimeout: 10 * time.Second})
		defer c.Close()
		// OBJECT IDLETIME counts whole seconds: start a tenth into one.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
		c.Set(ctx, "k", "hello", 0)
		c.Set(ctx, "other", "world", 0)
		time.Sleep(3 * time.Second)
		c.Touch(ctx, "k")
		c.Do(ctx, "OBJECT", "IDLETIME", "k") // the failure: 3 on the old build
		c.Eval(ctx, script, []string{"k"})
		c.Touch(ctx, "other", "nokey")
		c.Get(ctx, "k")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	set := gradetest.ParseSet(t, `name: touch-resets-idle
description: a key TOUCHed right before is not idle
when: req.command == "OBJECT" && req.args[0] == "IDLETIME" && size(steps) > 0 && steps[size(steps) - 1].req.command == "TOUCH"
check: reply == 0
`)
	fx = markAt(t, fx.Path, []string{"OBJECT", "IDLETIME", "k"}, "invariant:touch-resets-idle")
	eval := stepOf(t, fx, "EVAL", script, "1", "k")
	touch := stepOf(t, fx, "TOUCH", "other", "nokey")
	return afterShape{fx: fx, set: set, old: old, cases: []afterCase{
		{name: "correct fix", want: "fixed", check: func(t *testing.T, rep *grade.Report) {
			if r := explainedAs(rep, eval); r != grade.ReasonInputs {
				t.Errorf("the script reading k's idle time: explained as %q, want %s; explained %+v", r, grade.ReasonInputs, rep.Explained)
			}
			for _, e := range rep.Explained {
				if e.Step == eval && !slices.ContainsFunc(e.Inputs, func(f grade.InputField) bool { return f.Field == "k access" }) {
					t.Errorf("the script's inputs differ in %+v, want k's access time among them", e.Inputs)
				}
			}
		}},
		// Wrong: TOUCH touches, but counts the keys asked. A later TOUCH of
		// a key no fix changed and of a missing key answers 2 where the
		// old build said 1, on the same inputs.
		{name: "fix miscounting TOUCH", patches: touchMiscount, want: "diverged@" + itoa(touch)},
	}}
}

func TestAfterStateChangedSilently(t *testing.T) { stateChangedSilently(t).run(t) }

// TestAfterSettledSecondsUnderLoad grades the wrong fix of the third
// shape 150 times while stress-ng saturates the cores: diverged at the
// TOUCH every time. Its explanation of the script's answer rests on k's
// access clock, which each replay stamps right after the first clock move
// into another second, just after the first connection was opened: when
// the replay counted that connection's accept (left to a kernel thread
// under load) as the turn of Redis's timer, one old replay in about fifty
// stamped the old second, the access clock became noise, and the verdict
// said diverged at the script (docs/replay.md, "The clock library").
func TestAfterSettledSecondsUnderLoad(t *testing.T) {
	sh := stateChangedSilently(t)
	c := sh.cases[1]
	fixed := afterBuild(t, c.patches)
	defer loadtest.Stress(t)()
	wrong, runs := 0, loadtest.Runs(150)
	for i := range runs {
		rep := gradeAfter(t, sh.fx, sh.old, fixed, sh.set, c.variants)
		if rep.Verdict != c.want {
			wrong++
			t.Errorf("run %d: %s, want %s; noise %+v", i+1, rep.Verdict, c.want, rep.Evidence.Noise)
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d grades wrong", wrong, runs)
	}
}

// TestAfterTheFailureUnderLoad grades every candidate of the three
// shapes ten times while stress-ng saturates the cores: one verdict each
// time. The fingerprints are taken once the build is idle, so a loaded
// machine moves none of them.
func TestAfterTheFailureUnderLoad(t *testing.T) {
	shapes := []afterShape{changedRefusal(t), touchedAnotherName(t), stateChangedSilently(t)}
	defer loadtest.Stress(t)()
	for _, sh := range shapes {
		for _, c := range sh.cases {
			for i := range loadtest.Runs(10) {
				t.Logf("%s, run %d", c.name, i+1)
				sh.grade(t, c)
			}
		}
	}
}
