package grade_test

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/invariants"
)

// countingLauncher is the Redis integration counting the builds it has
// running at once, and the most it ever had.
type countingLauncher struct {
	redis.Integration
	live, peak, started *atomic.Int64
}

func (l countingLauncher) Start(ctx context.Context, b kavach.Launch) (kavach.Process, error) {
	p, err := l.Integration.Start(ctx, b)
	if err != nil {
		return nil, err
	}
	l.started.Add(1)
	n := l.live.Add(1)
	for {
		m := l.peak.Load()
		if n <= m || l.peak.CompareAndSwap(m, n) {
			break
		}
	}
	return &countedProcess{Process: p, live: l.live}, nil
}

type countedProcess struct {
	kavach.Process
	live *atomic.Int64
	once sync.Once
}

// Pid is the build's, so that the replay watches the build as it would
// without the count: without it, every reply not yet come was waited for
// 50 ms rather than until the build was idle, and this test took 155 s
// instead of 5.
func (p *countedProcess) Pid() int {
	if pp, ok := p.Process.(interface{ Pid() int }); ok {
		return pp.Pid()
	}
	return 0
}

func (p *countedProcess) Stop() *kavach.Exit {
	e := p.Process.Stop()
	p.once.Do(func() { p.live.Add(-1) })
	return e
}

// TestSuiteSharesPool grades a suite of three fixtures (two incidents
// and a candidate that fails one of them), with variants, under -j 2:
// the fixtures are graded at once, yet never more than two builds run at
// a time across all of them, counted where the builds start and stop,
// and each verdict is the one the fixture gets alone.
func TestSuiteSharesPool(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	examples := filepath.Join(filepath.Dir(file), "..", "examples")
	gr := filepath.Join(examples, "redis-getrange-crash")
	st := filepath.Join(examples, "redis-strlen-wrong-answer")
	grOld := redisbuild.MustBuild(t, filepath.Join(gr, "bug.patch"))
	grCorrect := redisbuild.MustBuild(t, filepath.Join(gr, "bug.patch"), filepath.Join(gr, "candidates", "correct.patch"))
	grNarrow := redisbuild.MustBuild(t, filepath.Join(gr, "bug.patch"), filepath.Join(gr, "candidates", "narrow.patch"))
	stOld := redisbuild.MustBuild(t, filepath.Join(st, "bug.patch"))
	stCorrect := redisbuild.MustBuild(t, filepath.Join(st, "bug.patch"), filepath.Join(st, "candidates", "correct.patch"))
	grFx, err := fixtures.Load(filepath.Join(gr, "fixture.kavach"))
	if err != nil {
		t.Fatal(err)
	}
	stFx, err := fixtures.Load(filepath.Join(st, "fixture.kavach"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := invariants.Load(filepath.Join(st, "strlen.invariants"))
	if err != nil {
		t.Fatal(err)
	}

	var live, peak, started atomic.Int64
	opts := grade.Options{Integration: countingLauncher{live: &live, peak: &peak, started: &started},
		Variants: 64, MinVariants: 10, Seed: 1, Jobs: 2}
	stOpts := opts
	stOpts.Invariants = set
	diffs := []grade.Diff{
		{Recording: fixtures.NewRecording(grFx, opts.Integration), Old: kavach.Launch{Path: grOld}, New: kavach.Launch{Path: grCorrect}, Options: opts},
		{Recording: fixtures.NewRecording(stFx, opts.Integration), Old: kavach.Launch{Path: stOld}, New: kavach.Launch{Path: stCorrect}, Options: stOpts},
		{Recording: fixtures.NewRecording(grFx, opts.Integration), Old: kavach.Launch{Path: grOld}, New: kavach.Launch{Path: grNarrow}, Options: opts},
	}
	var calls []int
	s, err := grade.RunSuite(context.Background(), diffs, grade.NewPool(2), func(done, total int) {
		calls = append(calls, done)
		if total != 3 {
			t.Errorf("progress: %d of %d fixtures, want of 3", done, total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 2 || p < 1 {
		t.Errorf("at most %d builds ran at once across the suite; want 1 or 2 (-j 2)", p)
	}
	if n := live.Load(); n != 0 {
		t.Errorf("%d builds still counted running after the suite", n)
	}
	var got []string
	for _, r := range s.Reports {
		got = append(got, r.Verdict)
		if r.Options.Jobs != 2 {
			t.Errorf("report's jobs %d, want 2", r.Options.Jobs)
		}
	}
	if len(got) != 3 || got[0] != "fixed" || got[1] != "fixed" || s.Headline != 2 || s.Verdict != got[2] {
		t.Errorf("verdicts %v, headline %s at %d; want fixed, fixed, then the narrow fix red as the headline", got, s.Verdict, s.Headline)
	}
	if len(calls) != 3 || calls[2] != 3 {
		t.Errorf("progress told %v, want 1, 2, 3", calls)
	}
	t.Logf("%d builds started, at most %d at once", started.Load(), peak.Load())
}

// TestSuiteErrorInArgumentOrder: a suite whose second fixture's new build
// does not start is that fixture's error (a *grade.SuiteError naming it),
// not the stop it caused the first one.
func TestSuiteErrorInArgumentOrder(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	gr := filepath.Join(filepath.Dir(file), "..", "examples", "redis-getrange-crash")
	old := redisbuild.MustBuild(t, filepath.Join(gr, "bug.patch"))
	fx, err := fixtures.Load(filepath.Join(gr, "fixture.kavach"))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.Integration{}
	opts := grade.Options{Integration: c, BelowFloor: true, Jobs: 2}
	missing := filepath.Join(t.TempDir(), "no-such-server")
	diffs := []grade.Diff{
		{Recording: fixtures.NewRecording(fx, c), Old: kavach.Launch{Path: old}, New: kavach.Launch{Path: old}, Options: opts},
		{Recording: fixtures.NewRecording(fx, c), Old: kavach.Launch{Path: old}, New: kavach.Launch{Path: missing}, Options: opts},
		{Recording: fixtures.NewRecording(fx, c), Old: kavach.Launch{Path: old}, New: kavach.Launch{Path: old}, Options: opts},
	}
	_, err = grade.RunSuite(context.Background(), diffs, nil, nil)
	var se *grade.SuiteError
	if !errors.As(err, &se) || se.Index != 1 || !strings.Contains(err.Error(), "new build") {
		t.Fatalf("suite error %v; want the second fixture's new build not starting", err)
	}
	t.Log(err)
}
