package grade_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/invariants"
)

// TestWritersStopAtAReplacingWrite: every step before the failing STRLEN
// sets the key it reads (200 SETs of 24-byte values, more than the
// budget samples), so only the last SET's value reaches it. The writers'
// variants go to that SET alone (the build flags SET's key OW), and the
// STRLEN example's narrow fix, right for 24-byte values only, is caught
// by one of them; the correct fix stays fixed. Sampled over the 200
// overwritten SETs instead, no variant changed the value read, and the
// narrow fix was graded fixed.
func TestWritersStopAtAReplacingWrite(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "examples", "redis-strlen-wrong-answer")
	bug := filepath.Join(dir, "bug.patch")
	old := redisbuild.MustBuild(t, bug)
	const sets = 200
	var session [][]string
	for n := 1; n <= sets; n++ {
		session = append(session, []string{"SET", "hot", fmt.Sprintf("value-%018d", n)})
	}
	session = append(session, []string{"STRLEN", "hot"}, []string{"GET", "hot"})
	out := filepath.Join(t.TempDir(), "hot.kavach")
	if err := incidents.RecordSession(out, old, session); err != nil {
		t.Fatal(err)
	}
	f := kavach.Failure{Step: sets + 1, Oracle: kavach.Oracle{Invariant: "strlen-matches"}, Signature: "invariant:strlen-matches"}
	if err := fixtures.Amend(out, fixtures.Amendment{Failure: &f}); err != nil {
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
	c := redis.Integration{}
	run := func(candidate string) *grade.Report {
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, c), kavach.Launch{Path: old},
			kavach.Launch{Path: redisbuild.MustBuild(t, bug, filepath.Join(dir, "candidates", candidate+".patch"))},
			grade.Options{Integration: c, Variants: 64, MinVariants: 10, Seed: 1, Invariants: set})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := run("correct"); rep.Verdict != "fixed" {
		t.Errorf("correct fix: %s, want fixed; findings %+v", rep.Verdict, rep.Findings)
	}
	rep := run("narrow")
	if !strings.HasPrefix(rep.Verdict, "variant_failed(") || !strings.HasSuffix(rep.Verdict, fmt.Sprintf(")@%d", sets+1)) {
		t.Errorf("narrow fix: %s, want variant_failed(K)@%d", rep.Verdict, sets+1)
	}
	last := fmt.Sprintf("step %d ", sets)
	writers := 0
	for _, v := range rep.Evidence.Variants.List {
		if v.Place != "writer" {
			continue
		}
		writers++
		if !strings.HasPrefix(v.Description, last) {
			t.Errorf("variant %d, a writer's: %q, want one of the last SET (%s)", v.K, v.Description, last)
		}
	}
	if writers == 0 {
		t.Error("no variant of a writer: want the last SET's")
	}
}
