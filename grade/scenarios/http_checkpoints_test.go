package scenarios_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/internal/axumbuild"
)

// TestHTTPCheckpoints: an HTTP service's checkpoint is its state
// directory as the build left it once stopped. On the HTTP incident
// recorded on a service started from its state directory (item 3 deleted
// at step 2, the crash at step 5), with checkpoints allowed from step 2
// on, the correct and the narrow fix get the verdict and the variants'
// judgements of the same variants replayed from the first step, and
// variants started from checkpoints on both builds. Planted fault: a
// correct fix that writes its state file back with every price 0 answers
// a replay from the start right (it keeps the prices it loaded in
// memory), but a build started from its state saved after the DELETE
// (step 2, the first change written back) reads prices of 0: its
// checkpoints after step 2 fail their check and are not used, and the
// grade is the one without checkpoints. The one before step 5 is refused
// only by the reads the check sends again (step 5 reads no price): with
// it used, one variant of step 5 was variant_failed where the same
// variant replayed from the start passed.
func TestHTTPCheckpoints(t *testing.T) {
	t.Parallel()
	old := axumbuild.MustBuild(t, axumbuild.MustPatch(t, "split-panics.patch"))
	narrow := axumbuild.MustBuild(t, axumbuild.MustPatch(t, "split-panics.patch"), axumbuild.MustPatch(t, "split-narrow.patch"))
	correct := axumbuild.MustBuild(t)
	zeroed := axumbuild.MustBuild(t, axumbuild.MustPatch(t, "save-drops-prices.patch"))

	stateDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(stateDir, "items.json"), []byte(stateItems), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "state.kavach")
	recordWithStateDir(t, out, old, stateDir, splitFromState)
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	c := axum.Integration{}
	args := fx.Header.Launch.Args
	pool := grade.NewPool(2)
	grades := func(build string) (whole, from *grade.Report) {
		run := func(off bool) *grade.Report {
			rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old, Args: args},
				kavach.Launch{Path: build, Args: args},
				grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1, Jobs: 2, Pool: pool, NoCheckpoints: off, CheckpointSteps: 1})
			if err != nil {
				t.Errorf("%s: %v", filepath.Base(build), err)
			}
			return rep
		}
		return run(true), run(false)
	}
	same := func(name string, whole, from *grade.Report) bool {
		if whole == nil || from == nil {
			return false
		}
		if whole.Verdict != from.Verdict {
			t.Errorf("%s: %s from checkpoints, %s replayed whole", name, from.Verdict, whole.Verdict)
		}
		if a, b := variantOutcomes(from), variantOutcomes(whole); strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s: the variants from checkpoints\n%s\nreplayed whole\n%s", name, strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
		if len(whole.Evidence.Variants.Checkpoints) != 0 {
			t.Errorf("%s: checkpoints turned off, yet %+v", name, whole.Evidence.Variants.Checkpoints)
		}
		return true
	}
	var wg sync.WaitGroup
	for _, tc := range []struct{ name, build, want string }{{"correct", correct, "fixed"}, {"narrow", narrow, "variant_failed("}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			whole, from := grades(tc.build)
			if !same(tc.name, whole, from) {
				return
			}
			if !strings.HasPrefix(from.Verdict, tc.want) {
				t.Errorf("%s: %s, want %s", tc.name, from.Verdict, tc.want)
			}
			used := map[string]int{}
			for _, cp := range from.Evidence.Variants.Checkpoints {
				if cp.Unused != "" {
					t.Errorf("%s: the %s build's checkpoint before step %d not used: %s", tc.name, cp.Build, cp.Step, cp.Unused)
				}
				used[cp.Build] += cp.Variants
			}
			if used["old"] == 0 || used["new"] == 0 {
				t.Errorf("%s: variants started from checkpoints %v, want some on each build", tc.name, used)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		whole, from := grades(zeroed)
		if !same("zeroed", whole, from) {
			return
		}
		if from.Verdict != "fixed" {
			t.Errorf("zeroed: %s, want fixed (a replay from the start sees no fault)", from.Verdict)
		}
		refused := 0
		for _, cp := range from.Evidence.Variants.Checkpoints {
			switch {
			case cp.Build == "new" && cp.Step > 2:
				if cp.Variants != 0 || !strings.Contains(cp.Unused, "answered") {
					t.Errorf("zeroed: the new build's checkpoint before step %d, after the DELETE wrote its prices as 0: %d variants from it, unused %q; want none, a step answered otherwise", cp.Step, cp.Variants, cp.Unused)
				}
				refused++
			case cp.Unused != "":
				t.Errorf("zeroed: the %s build's checkpoint before step %d not used: %s", cp.Build, cp.Step, cp.Unused)
			}
		}
		if refused == 0 {
			t.Errorf("zeroed: checkpoints %+v: want the new build's after step 2 tried", from.Evidence.Variants.Checkpoints)
		}
	}()
	wg.Wait()
}
