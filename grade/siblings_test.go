package grade_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// A fix made in one command of a family only: the same defect is one
// command away (EVALSHA, FCALL for EVAL; DECRBY, HINCRBY for INCRBY;
// EXPIRE, SETEX for SET ... EX; RPOP, BLPOP for LPOP; SUBSTR, LRANGE for
// GETRANGE). Each incident, typed into the stock redis-cli, used the one
// command; only a variant made by another member of its family sees the
// fault. The fix made in every member stays fixed.
func TestSiblingCommands(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli (the stock client, Debian's redis-tools) is needed: %v", err)
	}
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.FamiliesOld)...)
	fixed := redisbuild.MustBuild(t)
	oneMember := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.FamiliesOneMember)...)
	for _, inc := range incidents.FamilyIncidents {
		t.Run(strings.ReplaceAll(inc.Family, " ", "-"), func(t *testing.T) {
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
				if v.Kind == kind && v.Kept {
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
