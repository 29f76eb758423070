package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/invariants"
)

// redisExamples are the Redis examples' fixtures, old builds and the
// candidates named, as the examples ship them.
type exampleCase struct {
	name     string
	fx       *fixtures.Fixture
	old, new string
	inv      *invariants.Set
}

func redisExamples(t *testing.T, names ...string) []exampleCase {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "examples")
	var out []exampleCase
	for _, ex := range []string{"redis-getrange-crash", "redis-strlen-wrong-answer"} {
		dir := filepath.Join(root, ex)
		var spec struct {
			Invariants string
			Candidates []struct{ Name, Patch string }
		}
		b, err := os.ReadFile(filepath.Join(dir, "example.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &spec); err != nil {
			t.Fatal(err)
		}
		fx, err := fixtures.Load(filepath.Join(dir, "fixture.kavach"))
		if err != nil {
			t.Fatal(err)
		}
		var set *invariants.Set
		if spec.Invariants != "" {
			if set, err = invariants.Load(filepath.Join(dir, spec.Invariants)); err != nil {
				t.Fatal(err)
			}
		}
		bug := filepath.Join(dir, "bug.patch")
		old := redisbuild.MustBuild(t, bug)
		for _, c := range spec.Candidates {
			if !slices.Contains(names, c.Name) {
				continue
			}
			out = append(out, exampleCase{name: ex + "/" + c.Name, fx: fx, old: old, new: redisbuild.MustBuild(t, bug, filepath.Join(dir, c.Patch)), inv: set})
		}
	}
	return out
}

// variantOutcomes is each variant's judgement, for comparing two grades.
func variantOutcomes(rep *grade.Report) []string {
	var out []string
	for _, v := range rep.Evidence.Variants.List {
		out = append(out, fmt.Sprintf("%d %s kept=%v failed@%d diffs=%d steps=%d", v.K, v.Kind, v.Kept, v.FailedStep, len(v.Diffs), v.Replayed))
	}
	return out
}

// TestCheckpointedVariantsGradeAsReplayedWhole: on every Redis example,
// for its correct fix and its narrow one (fixed, and red by a variant),
// the variants started from checkpoints (every one that can: one step
// before the change is enough here) give the verdict and the judgement,
// variant by variant, of the same variants replayed from the first step
// (--checkpoints=false); and checkpoints were used, on both builds.
func TestCheckpointedVariantsGradeAsReplayedWhole(t *testing.T) {
	t.Parallel()
	c := redis.Integration{}
	pool := grade.NewPool(2)
	var wg sync.WaitGroup
	for _, ex := range redisExamples(t, "correct", "narrow") {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run := func(off bool) *grade.Report {
				rep, err := grade.Run(context.Background(), fixtures.NewRecording(ex.fx, c), kavach.Launch{Path: ex.old}, kavach.Launch{Path: ex.new},
					grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1, Invariants: ex.inv, Jobs: 2, Pool: pool, NoCheckpoints: off, CheckpointSteps: 1})
				if err != nil {
					t.Errorf("%s: %v", ex.name, err)
					return nil
				}
				return rep
			}
			whole, from := run(true), run(false)
			if whole == nil || from == nil {
				return
			}
			if whole.Verdict != from.Verdict {
				t.Errorf("%s: %s from checkpoints, %s replayed whole", ex.name, from.Verdict, whole.Verdict)
			}
			if a, b := variantOutcomes(from), variantOutcomes(whole); strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Errorf("%s: the variants from checkpoints\n%s\nreplayed whole\n%s", ex.name, strings.Join(a, "\n"), strings.Join(b, "\n"))
			}
			if len(whole.Evidence.Variants.Checkpoints) != 0 {
				t.Errorf("%s: checkpoints turned off, yet %+v", ex.name, whole.Evidence.Variants.Checkpoints)
			}
			used := map[string]int{}
			for _, cp := range from.Evidence.Variants.Checkpoints {
				if cp.Unused != "" {
					t.Errorf("%s: the %s build's checkpoint before step %d not used: %s", ex.name, cp.Build, cp.Step, cp.Unused)
				}
				used[cp.Build] += cp.Variants
			}
			if used["old"] == 0 || used["new"] == 0 && from.Evidence.Variants.Reproducing+from.Evidence.Variants.Handled > 0 {
				t.Errorf("%s: variants started from checkpoints %v, want some on each build", ex.name, used)
			}
		}()
	}
	wg.Wait()
}

// TestCheckpointCheckedBeforeUse: checkpoints that a build does not
// restore as it saved them are not used, the evidence says why, and the
// grade is the one with checkpoints turned off. Two planted faults in
// the restore, on the GETRANGE example: an old build that loses the
// first key of its data file (the key count differs), and a correct fix
// whose strings lose their last byte (the count holds; a step after the
// checkpoint answers otherwise).
func TestCheckpointCheckedBeforeUse(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "examples", "redis-getrange-crash")
	bug := filepath.Join(dir, "bug.patch")
	old := redisbuild.MustBuild(t, bug, filepath.Join(incidents.Patches(), "restore-drops-first-key.patch"))
	correct := redisbuild.MustBuild(t, bug, filepath.Join(dir, "candidates", "correct.patch"), filepath.Join(incidents.Patches(), "restore-truncates-strings.patch"))
	fx, err := fixtures.Load(filepath.Join(dir, "fixture.kavach"))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.Integration{}
	run := func(off bool) *grade.Report {
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: correct},
			grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1, NoCheckpoints: off, CheckpointSteps: 1})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	whole, from := run(true), run(false)
	if whole.Verdict != from.Verdict {
		t.Errorf("%s with checkpoints, %s replayed whole", from.Verdict, whole.Verdict)
	}
	if a, b := variantOutcomes(from), variantOutcomes(whole); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("the variants with checkpoints\n%s\nreplayed whole\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	want := map[string]string{"old": "keys", "new": "answered step"}
	seen := map[string]bool{}
	for _, cp := range from.Evidence.Variants.Checkpoints {
		seen[cp.Build] = true
		if cp.Variants != 0 || !strings.Contains(cp.Unused, want[cp.Build]) {
			t.Errorf("the %s build's checkpoint before step %d: %d variants started from it, unused %q; want none, unused saying %q", cp.Build, cp.Step, cp.Variants, cp.Unused, want[cp.Build])
		}
	}
	if !seen["old"] || !seen["new"] {
		t.Errorf("checkpoints %+v: want some tried on each build", from.Evidence.Variants.Checkpoints)
	}
}
