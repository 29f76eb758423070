package grade_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// A Memo replays each variant on the old build once for the diffs that
// share it, and changes no verdict: the narrow fix graded after the
// correct one takes every old replay from the memo and gets the verdict,
// and the old outcome of every variant, that it gets without the memo.
// A build file changed in between (same bytes, a new modification time)
// is a new build: nothing is reused.
func TestMemoRemembersTheOldBuild(t *testing.T) {
	t.Parallel()
	b := getBuilds(t)
	// A copy of the old build, so that its file can be touched.
	old := filepath.Join(t.TempDir(), "redis-old")
	data, err := os.ReadFile(b.old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, data, 0o755); err != nil {
		t.Fatal(err)
	}
	fx := recordIncident(t, b.old)
	c := redis.Integration{}
	memo := grade.NewMemo()
	run := func(new string, memo *grade.Memo) *grade.Report {
		t.Helper()
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old}, kavach.Launch{Path: new},
			grade.Options{Integration: c, MinVariants: 10, Variants: 64, Seed: 1, Memo: memo})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	remembered := func(rep *grade.Report) (n int) {
		for _, v := range rep.Evidence.Variants.List {
			if v.Remembered {
				n++
			}
		}
		return n
	}
	first := run(b.pristine, memo)
	if first.Verdict != "fixed" || remembered(first) != 0 {
		t.Fatalf("first diff: %s with %d variants remembered, want fixed with none", first.Verdict, remembered(first))
	}
	second := run(b.narrow, memo)
	alone := run(b.narrow, nil)
	list, aloneList := second.Evidence.Variants.List, alone.Evidence.Variants.List
	// All but the upgrade variant's: it starts from a state saved in
	// this diff (docs/variants.md, "Upgrade").
	if n, u := remembered(second), upgrades(list); n != len(list)-u || n == 0 || u != 1 {
		t.Errorf("second diff: %d of %d variants' old replays remembered, want all but the %d upgrade", n, len(list), u)
	}
	if second.Verdict != alone.Verdict || !strings.HasPrefix(second.Verdict, "variant_failed(") {
		t.Errorf("narrow fix: %s with the memo, %s without, want the same variant_failed", second.Verdict, alone.Verdict)
	}
	if len(list) != len(aloneList) {
		t.Fatalf("%d variants with the memo, %d without", len(list), len(aloneList))
	}
	for i, v := range list {
		a := aloneList[i]
		if v.K != a.K || v.Description != a.Description || v.Kept != a.Kept || v.OldStep != a.OldStep || v.OldOutcome.Kind != a.OldOutcome.Kind {
			t.Errorf("variant %d with the memo: %+v\nwithout: %+v", v.K, v, a)
		}
	}
	// The same bytes written again: another file, as far as a build's
	// identity goes.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(old, later, later); err != nil {
		t.Fatal(err)
	}
	if third := run(b.narrow, memo); remembered(third) != 0 {
		t.Errorf("after the old build's file changed: %d variants remembered, want none", remembered(third))
	}
}

// upgrades counts the upgrade variants of list not remembered: their
// replays start from a state saved in their diff.
func upgrades(list []grade.VariantEvidence) (n int) {
	for _, v := range list {
		if v.Kind == "upgrade" && !v.Remembered {
			n++
		}
	}
	return n
}
