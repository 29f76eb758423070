package grade_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// inferredOnly is the Redis integration without its probe: a grade with
// it judges the steps after the failure by the inferred rule, as before
// fingerprints, and takes none.
type inferredOnly struct{ redis.Integration }

func (i inferredOnly) Abilities() kavach.Abilities {
	ab := i.Integration.Abilities()
	ab.Fingerprint = &kavach.Fingerprinting{NewProbe: ab.Fingerprint.NewProbe, Launch: func(l kavach.Launch, _ func(func([]byte) bool)) (kavach.Launch, string) {
		return l, "switched off for the benchmark"
	}}
	return ab
}

// BenchmarkAfterTheFailure grades an incident whose failing step (2 of
// 602) is followed by 600 steps, with the steps after it fingerprinted
// (observed) and not (inferred), one after the other in each iteration,
// and reports each grade's time and their ratio. Run with
// go test -run XXX -bench AfterTheFailure -benchtime 3x ./grade
func BenchmarkAfterTheFailure(b *testing.B) {
	old := redisbuild.MustBuild(b, incidents.PatchPaths(incidents.IncrbyOld)...)
	fixed := redisbuild.MustBuild(b)
	session := [][]string{{"SET", "counter", "10"}, {"INCRBY", "counter", "-3"}}
	for i := range 300 {
		k := fmt.Sprintf("k%d", i%40)
		session = append(session, []string{"SET", k, fmt.Sprint(i)}, []string{"GET", k})
	}
	out := filepath.Join(b.TempDir(), "after.kavach")
	if err := incidents.RecordSession(out, old, session); err != nil {
		b.Fatal(err)
	}
	if err := incidents.MarkFailure(out, 2, "error"); err != nil {
		b.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		b.Fatal(err)
	}
	run := func(l kavach.Integration, want string) time.Duration {
		start := time.Now()
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, l), kavach.Launch{Path: old}, kavach.Launch{Path: fixed},
			grade.Options{Integration: l, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Verdict != "fixed" || len(rep.Evidence.Inputs) < len(want) || rep.Evidence.Inputs[:len(want)] != want {
			b.Fatalf("%s: %s judged by %q", want, rep.Verdict, rep.Evidence.Inputs)
		}
		return time.Since(start)
	}
	var observed, inferred time.Duration
	b.ResetTimer()
	for range b.N {
		observed += run(redis.Integration{}, grade.RuleObserved)
		inferred += run(inferredOnly{}, grade.RuleInferred)
	}
	n := float64(b.N)
	b.ReportMetric(float64(observed.Milliseconds())/n, "observed-ms/grade")
	b.ReportMetric(float64(inferred.Milliseconds())/n, "inferred-ms/grade")
	b.ReportMetric(float64(observed)/float64(inferred), "observed/inferred")
	b.ReportMetric(float64(observed-inferred)/n/600/1e3, "µs/fingerprinted-step")
}
