package grade_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// failingStarts is the Redis integration with chosen starts of one build,
// counted from 1, made to fail for real: they start an executable that
// does not exist.
type failingStarts struct {
	redis.Integration
	build   string // the build whose starts are counted
	missing string
	mu      sync.Mutex
	n       int
	fail    map[int]bool
}

func (f *failingStarts) Start(ctx context.Context, l kavach.Launch) (kavach.Process, error) {
	f.mu.Lock()
	fail := false
	if l.Path == f.build {
		f.n++
		fail = f.fail[f.n]
	}
	f.mu.Unlock()
	if fail {
		l.Path = f.missing
	}
	return f.Integration.Start(ctx, l)
}

// TestVariantStartRetried: a build that fails to start for a variant is
// started again; it failing once changes nothing, and it failing twice
// makes the diff an error (exit 2), never a verdict.
func TestVariantStartRetried(t *testing.T) {
	t.Parallel()
	b := getBuilds(t)
	fx := recordIncident(t, b.old)
	// One variant: the upgrade one, on top of the budget, is left out.
	f := *fx.Failure
	f.ExcludeVariants = []string{"upgrade"}
	fx.Failure = &f
	run := func(variants int, fail ...int) (*grade.Report, int, error) {
		l := &failingStarts{build: b.old, missing: filepath.Join(t.TempDir(), "missing-build"), fail: map[int]bool{}}
		for _, n := range fail {
			l.fail[n] = true
		}
		rep, err := grade.Run(context.Background(), fixtures.NewRecording(fx, l), kavach.Launch{Path: b.old}, kavach.Launch{Path: b.pristine},
			grade.Options{Integration: l, Variants: variants, MinVariants: 0, Seed: 1, Jobs: 1})
		return rep, l.n, err
	}
	// The old build's replay of the one variant is its last start: after
	// its replays of the fixture, and after it was asked about its
	// commands to make the variant.
	want, all, err := run(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Evidence.Variants.List) != 1 {
		t.Fatalf("%d variants graded, want 1", len(want.Evidence.Variants.List))
	}
	got, starts, err := run(1, all)
	if err != nil {
		t.Fatalf("a variant's build failing to start once: %v; want it started again", err)
	}
	if got.Verdict != want.Verdict {
		t.Errorf("verdict %s after a failed start was retried, %s without one", got.Verdict, want.Verdict)
	}
	if starts != all+1 {
		t.Errorf("%d starts of the old build with one failed, %d without: want one more", starts, all)
	}
	rep, _, err := run(1, all, all+1)
	if err == nil || !strings.Contains(err.Error(), "did not start, twice") {
		t.Errorf("a variant's build failing to start twice: report %v, error %v; want an error saying it did not start twice", rep != nil, err)
	}
}
