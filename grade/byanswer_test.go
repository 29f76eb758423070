package grade_test

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
	"github.com/kavach-dev/kavach/invariants"
)

// evalAnswers is an oracle invariant that names the recorded command: it
// does not apply to the same script run by EVALSHA, FCALL or EVAL_RO.
const evalAnswers = `name: eval-answers
description: EVAL never refuses an empty script argument
when: req.command == "EVAL"
check: !(outcome.startsWith("error:") && reply.error.contains("empty script argument"))
`

// TestReproducesByTheFailingAnswer: the script incident whose EVAL is
// refused (empty ARGV), marked with an invariant oracle that names EVAL.
// A runner variant (the same script by EVALSHA, FCALL, EVAL_RO) is outside
// the invariant, yet the old build refuses it with exactly the recorded
// error: it reproduces by the failing answer itself. The fix made on the
// EVAL path only still gives that answer through FCALL: variant_failed,
// by the same rule. With the rule left out (variants that the invariant
// does not speak for not counted), the runner variants reproduce nothing
// and the narrow fix has nothing to fail.
func TestReproducesByTheFailingAnswer(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsNarrow)...)
	fx := recordScript(t, old, incidents.RecordScriptEmptyArg)
	if want := "error:ERR empty script argument not allowed"; fx.Failure.Signature != want {
		t.Fatalf("recorded %q, want %q", fx.Failure.Signature, want)
	}
	fx.Failure = &kavach.Failure{Step: fx.Failure.Step, Oracle: kavach.Oracle{Invariant: "eval-answers"}, Signature: "invariant:eval-answers"}
	set, err := invariants.Parse("eval.invariants", evalAnswers)
	if err != nil {
		t.Fatal(err)
	}
	run := func(new string) *grade.Report {
		t.Helper()
		c := redis.Integration{}
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
			grade.Options{Integration: c, Seed: 1, Memo: gradetest.OldReplays, Variants: 64, MinVariants: 10, Invariants: set})
		if err != nil {
			t.Fatal(err)
		}
		gradetest.ReadBack(t, rep)
		return rep
	}
	byAnswer := func(rep *grade.Report) (n int) {
		for _, v := range rep.Evidence.Variants.List {
			if v.Kept && v.Kind == "runner" && strings.Contains(v.OldOutcome.Detail, "where invariant eval-answers does not apply") {
				n++
			}
		}
		return n
	}
	good := run(fixed)
	if good.Verdict != "fixed" {
		t.Fatalf("correct fix: %s, want fixed; findings %+v", good.Verdict, good.Findings)
	}
	if n := byAnswer(good); n < 2 {
		t.Errorf("correct fix: %d runner variants reproduce by the failing answer, want 2 or more", n)
	}
	bad := run(narrow)
	if !strings.HasPrefix(bad.Verdict, "variant_failed(") {
		t.Fatalf("fix on the EVAL path only: %s, want variant_failed; findings %+v", bad.Verdict, bad.Findings)
	}
	for _, v := range bad.Evidence.Variants.List {
		if v.FailedStep > 0 && v.Kind != "runner" {
			t.Errorf("variant %d (%s, %s) failed: another mechanism sees the fault", v.K, v.Kind, v.Description)
		}
	}
}
