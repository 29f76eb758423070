package grade_test

import (
	"context"
	"os/exec"
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
	"github.com/kavach-dev/kavach/variants"
)

// A fix made in one command of a family only: the same defect is one
// command away (EVALSHA, FCALL for EVAL; DECRBY, HINCRBY for INCRBY;
// EXPIRE, SETEX for SET ... EX; RPOP, BLPOP for LPOP; SUBSTR, LRANGE for
// GETRANGE). Each incident, typed into the stock redis-cli, used the one
// command; only a variant made by another member of its family sees the
// fault. The fix made in every member stays fixed.
func TestSiblingCommands(t *testing.T) {
	t.Parallel()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli (the stock client, Debian's redis-tools) is needed: %v", err)
	}
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.FamiliesOld)...)
	fixed := redisbuild.MustBuild(t)
	oneMember := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.FamiliesOneMember)...)
	for _, inc := range incidents.FamilyIncidents {
		t.Run(strings.ReplaceAll(inc.Family, " ", "-"), func(t *testing.T) {
			fixed, oneMember := fixed, oneMember
			if inc.Family == "script runners" {
				fixed = redisbuild.MustBuild(t, incidents.PatchPaths(incidents.FamiliesScriptRunnersFixed)...)
				oneMember = redisbuild.MustBuild(t, incidents.PatchPaths(incidents.FamiliesEvalOnly)...)
			}
			out := filepath.Join(t.TempDir(), "family.kavach")
			if err := incidents.RecordWithRedisCli(out, old, cli, inc.Session); err != nil {
				t.Fatal(err)
			}
			if err := incidents.MarkFailure(out, inc.Failing, "error"); err != nil {
				t.Fatal(err)
			}
			fx, err := fixtures.Load(out)
			if err != nil {
				t.Fatal(err)
			}

			rep := diff(t, fx, old, fixed, 10)
			for _, v := range rep.Evidence.Variants.List {
				if v.FailedStep > 0 {
					t.Logf("fix in every member: variant %d (%s) failed at step %d: old %+v, new %+v, diffs %+v", v.K, v.Description, v.FailedStep, v.OldOutcome, v.NewOutcome, v.Diffs)
				}
			}
			if rep.Verdict != "fixed" || rep.Evidence.Variants.Reproducing < 10 {
				t.Fatalf("fix in every member: %s with %d variants reproducing, want fixed with 10; findings %+v",
					rep.Verdict, rep.Evidence.Variants.Reproducing, rep.Findings)
			}
			// Script runners are made as "runner" variants (docs/variants.md).
			kind := "sibling"
			if inc.Family == "script runners" {
				kind = "runner"
			}
			siblings := 0
			for _, v := range rep.Evidence.Variants.List {
				// Writers made by their own family's siblings (place
				// writer) are not the failing request's siblings.
				if v.Kind == kind && v.Kept && v.Place != variants.PlaceWriter {
					siblings++
					if kind == "sibling" && !strings.Contains(v.Description, "("+inc.Family+")") {
						t.Errorf("sibling variant %d of another family: %s", v.K, v.Description)
					}
				}
			}
			f, _ := redis.FamilyOf(inc.Session[inc.Failing-2][0])
			if want := min(2, len(f.Members)-1); siblings < want || f.Name != inc.Family {
				t.Errorf("fix in every member: %d sibling variants of %q reproduce the failure, want %d of %s", siblings, f.Name, want, inc.Family)
			}
			if s := rep.Evidence.Variants.SkippedSiblings; len(s) > 0 {
				t.Errorf("members skipped on Redis 7.0, which has them all: %v", s)
			}

			rep = diff(t, fx, old, oneMember, 10)
			if !strings.HasPrefix(rep.Verdict, "variant_failed(") {
				t.Fatalf("fix in one member: %s, want variant_failed; findings %+v", rep.Verdict, rep.Findings)
			}
			for _, v := range rep.Evidence.Variants.List {
				if v.FailedStep > 0 && v.Kind != kind {
					t.Errorf("fix in one member: variant %d (%s, %s) failed: another mechanism sees the fault, the test proves nothing", v.K, v.Kind, v.Description)
				}
			}
		})
	}
}

// Runners the old build lacks (here renamed away, as an operator may
// disable a command) are not made, and the report names them among the
// skipped siblings; the correct fix stays fixed on the runners it has.
func TestRunnersTheOldBuildLacks(t *testing.T) {
	t.Parallel()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli (the stock client, Debian's redis-tools) is needed: %v", err)
	}
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.FamiliesOld)...)
	fixed := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.FamiliesScriptRunnersFixed)...)
	i := slices.IndexFunc(incidents.FamilyIncidents, func(inc incidents.FamilyIncident) bool { return inc.Family == "script runners" })
	inc := incidents.FamilyIncidents[i]
	out := filepath.Join(t.TempDir(), "runners.kavach")
	if err := incidents.RecordWithRedisCli(out, old, cli, inc.Session); err != nil {
		t.Fatal(err)
	}
	if err := incidents.MarkFailure(out, inc.Failing, "error"); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--rename-command", "EVAL_RO", "", "--rename-command", "FCALL_RO", ""}
	c := redis.Integration{}
	rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old, Args: args}, kavach.Launch{Path: fixed, Args: args},
		grade.Options{Integration: c, MinVariants: 10, Variants: 64, Seed: 1, Memo: gradetest.OldReplays})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "fixed" {
		t.Errorf("correct fix: %s; findings %+v", rep.Verdict, rep.Findings)
	}
	if s := rep.Evidence.Variants.SkippedSiblings; !slices.Equal(s, []string{"EVAL_RO", "FCALL_RO"}) {
		t.Errorf("skipped siblings %v, want EVAL_RO, FCALL_RO", s)
	}
	runners := 0
	for _, v := range rep.Evidence.Variants.List {
		if v.Kind != "runner" {
			continue
		}
		runners++
		if strings.Contains(v.Description, "EVAL_RO") || strings.Contains(v.Description, "FCALL_RO") {
			t.Errorf("variant %d runs the script through a runner the old build lacks: %s", v.K, v.Description)
		}
	}
	if runners == 0 {
		t.Error("no runner variant: want those the old build has")
	}
}
