// Package grading is Kavach's use case: grade this fixture with these
// builds. It owns the request to grade (Request), opens a fixture once
// (Open gives an Opened), finds the integration that speaks its protocol, and builds
// the grade's options (skimming, normalizer, invariants, launch
// arguments). The fixture's other verbs are here too: a replay against
// one build judged step by step (Replay, ReplayResult.Print), the
// variants a diff would generate or ran (ListVariants, ReportVariants)
// and its failure marked (Mark). Their results are data: package
// textreport renders the text that `kavach diff`, the MCP tool and the
// other verbs print of them (a fixture shown for a person included); it
// imports grading, never the reverse. Two results still print themselves:
// a replay's table, read back from the runs it spilled, and a verdict
// checked again (ReplayResult.Print, VerdictCheck.Print).
// cmd/kavach turns flags into a request and errors into exit statuses;
// mcpserver turns a tool call into one; the example harness (kavach
// grade) calls Grade as they do.
//
// Layers: cmd/kavach and mcpserver -> textreport -> grading -> grade,
// replay, variants -> integrations -> the root package.
package grading

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/invariants"
)

// Request is one grading: `kavach diff`'s arguments and flags, as the
// command line and the MCP tool ask for it.
type Request struct {
	Old, New, Fixture string
	Invariants        string // file; "" finds embedded or beside the fixture
	Variants          int
	MinVariants       int
	Seed              uint64
	Jobs              int // replays at once; 0: as many as the CPUs kavach may use
	FailFast          bool
	// NoCheckpoints replays every step of every variant
	// (--checkpoints=false; grade.Options.NoCheckpoints).
	NoCheckpoints bool
	StepTimeout   time.Duration
	StartTimeout  time.Duration
	BelowFloor    bool
	// TrustLaunch starts the builds with every launch argument the fixture
	// recorded (--trust-fixture-launch); otherwise they pass an allowlist.
	// The command line alone may set it.
	TrustLaunch bool
	// Opened is Fixture opened already (Open), as the command line does
	// when it checks its arguments; nil: Grade opens Fixture.
	Opened *Opened
	// Warn, if set, is told what is wrong with the fixture that does not
	// stop the grade (a damaged tail, its last steps lost); nil: nobody.
	Warn func(error)
	// Progress, if set, is told each time a replay (or a variant)
	// finishes; for a suite, each time a fixture is graded.
	Progress func(done, total int)
	// Memo, if set, is shared by the requests that grade several new
	// builds against one old build and fixture in this process (the
	// example harness): each variant is replayed on the old build once
	// (grade.Memo). Nil: each request replays its own.
	Memo *grade.Memo
}

// UsageError is a request that means nothing (a negative count, a
// timeout that is not positive); Hint, when set, says what to do.
type UsageError struct {
	Msg, Hint string
}

func (e *UsageError) Error() string {
	if e.Hint == "" {
		return e.Msg
	}
	return e.Msg + "\n" + e.Hint
}

func usagef(hint, format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// Check refuses numbers that mean nothing: negative counts, timeouts that
// are not positive. Zero variants (none), zero minimum (no evidence
// needed) and zero jobs (one per core) mean something.
func (r Request) Check() error {
	for _, n := range []struct {
		flag string
		v    int
	}{{"--variants", r.Variants}, {"--min-variants", r.MinVariants}, {"-j", r.Jobs}} {
		if n.v < 0 {
			return usagef("", "%s %d: need 0 or more", n.flag, n.v)
		}
	}
	return CheckTimeouts(map[string]time.Duration{"--step-timeout": r.StepTimeout, "--start-timeout": r.StartTimeout})
}

// CheckTimeouts refuses a timeout that is not positive; timeouts are
// keyed by their flag (--step-timeout, --start-timeout).
func CheckTimeouts(timeouts map[string]time.Duration) error {
	for _, flag := range []string{"--step-timeout", "--start-timeout"} {
		if d, ok := timeouts[flag]; ok && d <= 0 {
			return usagef("", "%s %v: need a positive duration, such as 5s", flag, d)
		}
	}
	return nil
}

// Grade grades a new build against a fixture: the one code path of
// `kavach diff`, of the MCP tool and of the example harness.
func Grade(ctx context.Context, r Request) (*grade.Report, error) {
	d, err := r.prepare()
	if err != nil {
		return nil, err
	}
	return grade.Run(ctx, d.Recording, d.Old, d.New, d.Options)
}

// prepare checks a request and opens what grading its fixture takes.
func (r Request) prepare() (grade.Diff, error) {
	if err := r.Check(); err != nil {
		return grade.Diff{}, err
	}
	rec := r.Opened
	if rec == nil || rec.path != r.Fixture {
		var err error
		if rec, err = Open(r.Fixture, ToGrade); err != nil {
			return grade.Diff{}, err
		}
	}
	if w := rec.Warning(); w != nil && r.Warn != nil {
		r.Warn(w)
	}
	if err := checkLaunch(context.Background(), rec.in, rec.fx, r.TrustLaunch, r.Old, r.New); err != nil {
		return grade.Diff{}, err
	}
	set, err := LoadInvariants(r.Invariants, rec.fx)
	if err != nil {
		return grade.Diff{}, err
	}
	ropts := rec.ReplayOptions(r.StepTimeout, r.StartTimeout)
	opts := grade.Options{
		Integration: ropts.Integration,
		StepTimeout: ropts.StepTimeout, Prepare: ropts.Prepare,
		Variants: r.Variants, MinVariants: r.MinVariants, Seed: r.Seed, Jobs: r.Jobs,
		FailFast: r.FailFast, NoCheckpoints: r.NoCheckpoints, Invariants: set, Progress: r.Progress,
		BelowFloor: r.BelowFloor, StartTimeout: r.StartTimeout, Memo: r.Memo,
	}
	if set != nil {
		opts.InvariantsFile = set.File
	}
	return grade.Diff{Recording: rec.Recording, Old: rec.Launch(r.Old), New: rec.Launch(r.New), Options: opts}, nil
}

// GradeSuite grades one build pair against every fixture at once, as
// Grade grades one, their replays sharing one pool of r.Jobs places; the
// first fixture (in order) Kavach cannot grade stops it. r.Progress is
// told of each fixture graded.
func GradeSuite(ctx context.Context, r Request, fixtures []string) (*grade.SuiteReport, error) {
	diffs := make([]grade.Diff, len(fixtures))
	for i, f := range fixtures {
		fr := r
		fr.Fixture, fr.Opened = f, nil
		d, err := fr.prepare()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		diffs[i] = d
	}
	s, err := grade.RunSuite(ctx, diffs, grade.NewPool(r.Jobs), r.Progress)
	var se *grade.SuiteError
	if errors.As(err, &se) {
		return nil, fmt.Errorf("%s: %w", fixtures[se.Index], se.Err)
	}
	return s, err
}

// FixtureArgs are the fixtures a diff was given: the arguments, a
// directory among them standing for its .kavach files in name order.
// suite is true for more than one fixture, or any directory.
func FixtureArgs(args []string) (list []string, suite bool, err error) {
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			list = append(list, a) // CheckFixtures says what is wrong with it
			continue
		}
		suite = true
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, false, fmt.Errorf("fixtures: %w", err)
		}
		var found []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".kavach") {
				found = append(found, filepath.Join(a, e.Name()))
			}
		}
		if len(found) == 0 {
			return nil, false, usagef("give fixture files, or a directory holding some", "fixtures: directory %s holds no .kavach files", a)
		}
		slices.Sort(found)
		list = append(list, found...)
	}
	return list, suite || len(list) > 1, nil
}

// CheckFixtures checks that each path is a fixture Kavach can grade: it
// exists, can be read, opens with a fixture's header, and names a
// protocol Kavach speaks (Open, ToCheck). The error names the path.
func CheckFixtures(list []string) error {
	for _, f := range list {
		if _, err := Open(f, ToCheck); err != nil {
			return err
		}
	}
	return nil
}

// Exit statuses of a verdict, as docs/design.md §3 defines them.
const (
	ExitGreen      = 0 // fixed or held
	ExitRed        = 1 // diverged, still_failing, invariant_violated, variant_failed
	ExitUnverified = 3 // unverified
)

// ExitStatus is the status `kavach diff` exits with for a verdict kind.
func ExitStatus(kind string) int {
	switch {
	case grade.Green(kind):
		return ExitGreen
	case kind == grade.Unverified:
		return ExitUnverified
	}
	return ExitRed
}

// ReportPath is where a report goes: out, or a new file in the temporary
// directory when out is "".
func ReportPath(out string) (string, error) {
	if out != "" {
		return out, nil
	}
	f, err := os.CreateTemp("", "kavach-report-*.json")
	if err != nil {
		return "", err
	}
	f.Close()
	return f.Name(), nil
}

// WriteReport writes a report (one fixture's, or a suite's) as JSON, to a
// file beside path renamed into place: a report is whole or not there.
func WriteReport(path string, rep any) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// LoadInvariants finds a fixture's invariants: the file given, else the
// last invariants embedded in the fixture, else FIXTURE's name with
// .invariants beside it; nil when there are none.
func LoadInvariants(file string, fx *fixtures.Fixture) (*invariants.Set, error) {
	if file != "" {
		return invariants.Load(file)
	}
	if n := len(fx.Invariants); n > 0 {
		inv := fx.Invariants[n-1]
		return invariants.Parse(fx.Path+" (embedded "+inv.Name+")", inv.Source)
	}
	beside := strings.TrimSuffix(fx.Path, fixtures.Ext) + ".invariants"
	if _, err := os.Stat(beside); err == nil {
		return invariants.Load(beside)
	}
	return nil, nil
}
