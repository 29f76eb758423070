package grade

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/replay"
)

// Pool is the limit on builds running at once that the diffs of a suite
// share: replays, variants and the old build's questions (keys, field
// types) of every fixture graded with it take a place in it. It also
// hashes each build once for all of them.
type Pool struct {
	sem    chan struct{}
	mu     sync.Mutex
	hashes map[string]string
}

// NewPool returns a pool of jobs places; zero or less means as many as
// the CPUs this process may use (GOMAXPROCS, which follows a container's
// CPU quota, where the host's core count would not).
func NewPool(jobs int) *Pool {
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	return &Pool{sem: make(chan struct{}, jobs), hashes: map[string]string{}}
}

// Size is how many builds the pool lets run at once.
func (p *Pool) Size() int { return cap(p.sem) }

// acquire waits for a place; false when ctx ended first.
func (p *Pool) acquire(ctx context.Context) bool {
	select {
	case p.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *Pool) release() { <-p.sem }

// sha256 is the SHA-256 of the file at path, taken once per path.
func (p *Pool) sha256(path string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	sum, ok := p.hashes[path]
	if !ok {
		sum, _ = fixtures.SHA256File(path)
		p.hashes[path] = sum
	}
	return sum
}

// identify is a build's identity in a report.
func (p *Pool) identify(l kavach.Launch, tr *replay.Trace) Build {
	return Build{Path: l.Path, Args: l.Args, SHA256: p.sha256(tr.Build.Path), Version: tr.Version}
}

// Diff is one fixture of a suite: what Run takes. Its Options.Pool and
// Options.Progress are RunSuite's.
type Diff struct {
	Recording *fixtures.Recording
	Old, New  kavach.Launch
	Options   Options
}

// SuiteError is a suite Kavach could not grade: the first of its diffs,
// in their order, that could not be graded.
type SuiteError struct {
	Index int // in the diffs given to RunSuite
	Err   error
}

func (e *SuiteError) Error() string { return e.Err.Error() }
func (e *SuiteError) Unwrap() error { return e.Err }

// errSuiteStopped is why a suite's other diffs stop when one cannot be
// graded.
var errSuiteStopped = errors.New("another fixture of the suite could not be graded")

// RunSuite grades the diffs at once, their builds sharing pool (one of
// its own with the first diff's Jobs when nil), and returns their
// reports in the diffs' order under the suite's headline. progress, if
// set, is told (done, total) each time a fixture's grading ends. The
// first diff in order that cannot be graded is the error (a *SuiteError),
// and it stops the others.
func RunSuite(ctx context.Context, diffs []Diff, pool *Pool, progress func(done, total int)) (*SuiteReport, error) {
	if len(diffs) == 0 {
		return nil, fmt.Errorf("grade: a suite of no fixtures")
	}
	if pool == nil {
		pool = NewPool(diffs[0].Options.Jobs)
	}
	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	reports := make([]*Report, len(diffs))
	errs := make([]error, len(diffs))
	own := make([]bool, len(diffs)) // an error of the diff's own, not the stop
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	for i, d := range diffs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := d.Options
			opts.Pool, opts.Progress = pool, nil
			rep, err := Run(sctx, d.Recording, d.Old, d.New, opts)
			mu.Lock()
			reports[i], errs[i] = rep, err
			if err != nil {
				own[i] = sctx.Err() == nil
				stop(errSuiteStopped)
			}
			done++
			if progress != nil {
				progress(done, len(diffs))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	// The first error in order of a diff's own, not the stop another one
	// caused; when interrupted, the first error in order.
	for i, err := range errs {
		if err != nil && (own[i] || ctx.Err() != nil) {
			return nil, &SuiteError{Index: i, Err: err}
		}
	}
	for i, err := range errs {
		if err != nil {
			return nil, &SuiteError{Index: i, Err: err}
		}
	}
	return NewSuiteReport(reports), nil
}
