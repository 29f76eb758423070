package grade_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// recordScript records one of the script incidents on old with the stock
// redis-cli.
func recordScript(t *testing.T, old string, record func(out, old, cli string) error) *fixtures.Fixture {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli (the stock client, Debian's redis-tools) is needed: %v", err)
	}
	out := filepath.Join(t.TempDir(), "script.kavach")
	if err := record(out, old, cli); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

// A fix of HINCRBY's refusal of negative increments, made for the command
// the incident's script calls: the same refusal in HINCRBYFLOAT, which a
// script may call as well, is left. Only the script's call site varied to
// its sibling sees it; the correct fix stays fixed.
func TestScriptSites(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsNarrow)...)
	fx := recordScript(t, old, incidents.RecordScriptHincrby)
	if !strings.HasPrefix(fx.Failure.Signature, "error:ERR negative hash increment not allowed") {
		t.Fatalf("recorded %q, want the refusal of the increment", fx.Failure.Signature)
	}
	// One site variant reproduces: the sibling with the same refusal.
	checkKind(t, fx, old, fixed, narrow, 64, "script-site", 1, func(v grade.VariantEvidence) bool {
		return strings.Contains(v.Description, `"HINCRBYFLOAT"`)
	})
}

// A fix of the refusal of an empty ARGV made on the EVAL path only: the
// same script run as a function (FCALL) is still refused. Only the script
// run through another runner sees it; the correct fix stays fixed.
func TestScriptRunners(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsNarrow)...)
	fx := recordScript(t, old, incidents.RecordScriptEmptyArg)
	if want := "error:ERR empty script argument not allowed"; fx.Failure.Signature != want {
		t.Fatalf("recorded %q, want %q", fx.Failure.Signature, want)
	}
	// The runners the default budget keeps: two of EVALSHA, FCALL and
	// EVAL_RO at seed 1 since the connection modes took their share of
	// the failing request's budget (EVALSHA_RO and FCALL_RO with a larger
	// budget); FCALL among them, which the narrow fix fails.
	checkKind(t, fx, old, fixed, narrow, 64, "runner", 2, func(v grade.VariantEvidence) bool {
		return strings.Contains(v.Description, "FCALL")
	})
}

// TestScriptSites's fault, with the script loaded by SCRIPT LOAD and run
// by EVALSHA: the failing request does not carry the script. It is found
// in the SCRIPT LOAD before it; the site varied to HINCRBYFLOAT (the
// changed script loaded again, run by its own sha1) is still the only
// variant that sees the narrow fix.
func TestScriptSitesEvalsha(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsNarrow)...)
	fx := recordScript(t, old, incidents.RecordScriptEvalsha)
	if !strings.HasPrefix(fx.Failure.Signature, "error:ERR negative hash increment not allowed") {
		t.Fatalf("recorded %q, want the refusal of the increment", fx.Failure.Signature)
	}
	checkKind(t, fx, old, fixed, narrow, 64, "script-site", 1, func(v grade.VariantEvidence) bool {
		return strings.Contains(v.Description, `"HINCRBYFLOAT"`) && strings.Contains(v.Description, "SCRIPT LOAD")
	})
}

// A fix of the empty ARGV's refusal made on the FCALL path only: the
// incident's function (loaded by FUNCTION LOAD, called by FCALL) run
// through EVAL or EVALSHA, its library wrapped into a script, is still
// refused. Only those runners see it; the correct fix stays fixed.
func TestScriptRunnersFcall(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsOld)...)
	fixed := redisbuild.MustBuild(t)
	narrow := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsFcallOnly)...)
	fx := recordScript(t, old, incidents.RecordScriptFcall)
	if want := "error:ERR empty script argument not allowed"; fx.Failure.Signature != want {
		t.Fatalf("recorded %q, want %q", fx.Failure.Signature, want)
	}
	// Two runners at the default budget, seed 1 (three before the
	// connection modes took a share of the failing request's budget).
	checkKind(t, fx, old, fixed, narrow, 64, "runner", 2, func(v grade.VariantEvidence) bool {
		return strings.Contains(v.Description, "the function greet (its library wrapped into a script) run through EVAL")
	})
}

// A script whose command Kavach cannot read (redis.call(ARGV[2], ...)) is
// left whole: no site variant, and the report says so.
func TestScriptLeftWhole(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ScriptsOld)...)
	fx := recordValues(t, old, incidents.RecordScriptDynamic)
	rep := diffBudget(t, fx, old, redisbuild.MustBuild(t), 16)
	if l := rep.Evidence.Variants.LeftWhole; len(l) != 1 || !strings.HasPrefix(l[0], "the script of EVAL: ") {
		t.Errorf("left_whole %q, want the script named", l)
	}
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind == "script-site" {
			t.Errorf("variant %d (%s): a script left whole has no site variants", v.K, v.Description)
		}
	}
}
