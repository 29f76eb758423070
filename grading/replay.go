package grading

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/internal/cut"
	"github.com/kavach-dev/kavach/internal/pathcheck"
	"github.com/kavach-dev/kavach/invariants"
	"github.com/kavach-dev/kavach/launch"
	"github.com/kavach-dev/kavach/replay"
)

// ReplayRequest is `kavach replay BUILD FIXTURE`: replay the fixture
// against one build, Runs times, the last of two or more perturbed, and
// judge each step of the first run by the rule kavach diff holds its old
// build to (docs/replay.md).
type ReplayRequest struct {
	Build, Fixture string
	Invariants     string // file; "" finds embedded or beside the fixture
	Runs           int    // 1 or more
	StepTimeout    time.Duration
	StartTimeout   time.Duration
	// Warn, if set, is told what is wrong with the fixture that does not
	// stop the replay (a damaged tail); nil: nobody.
	Warn        func(error)
	RealTime    bool // do not fake the clock
	TrustLaunch bool // --trust-fixture-launch
	// JSON keeps each run's steps and the judgments, as they are made,
	// for PrintJSON; without it the result prints with Print.
	JSON bool
}

// ReplayResult is a replay judged: the runs, spilled to files until
// Close, and the verdict per step.
type ReplayResult struct {
	Verification replay.Verification
	runs         *replayRuns
	noise        replay.Noise
	seen         []replay.NoiseField // the noise, with the values it took
	counts       map[string]int      // steps by status
	violated     func(int) bool      // nil: no invariant failure
	parts        *jsonParts          // with JSON
	missing      string              // the state the fixture lacks, said; "" when none
	order        string              // a difference at a step of an order not known, said; "" when none
}

// Reproduced reports whether the build reproduced the recording.
func (res *ReplayResult) Reproduced() bool { return res.Verification.Reproduced }

// Close removes the runs' spills.
func (res *ReplayResult) Close() {
	res.runs.close()
	if res.parts != nil {
		res.parts.close()
	}
}

// Print writes the table of kavach replay: the first run judged step by
// step against the recording.
func (res *ReplayResult) Print(w io.Writer) error {
	if err := res.runs.print(w, res.Verification, res.noise, res.seen, res.counts, res.violated); err != nil {
		return err
	}
	if res.order != "" {
		fmt.Fprintf(w, "order     %s\n", res.order)
	}
	if res.missing != "" {
		fmt.Fprintf(w, "missing   %s\n", res.missing)
	}
	return nil
}

// PrintJSON writes {"noise", "traces", "verification"} as a JSON object;
// the request must have asked for JSON.
func (res *ReplayResult) PrintJSON(w io.Writer) error {
	if res.parts == nil {
		return fmt.Errorf("replay: the request did not ask for JSON")
	}
	return res.runs.printJSON(w, res.parts, res.Verification, res.seen)
}

// Replay replays the fixture against the build as r asks and judges it.
// Each run's steps go to a spill file as they are final, and are read
// back in step order beside the recording's: memory does not grow with
// the fixture (docs/replay.md). The caller closes the result.
func Replay(ctx context.Context, r ReplayRequest) (*ReplayResult, error) {
	rec, opts, set, err := r.open()
	if err != nil {
		return nil, err
	}
	fx, sum := rec.Records(), rec.Summary()
	seed, removeSeed, err := fx.OpenSeed()
	if err != nil {
		return nil, err
	}
	defer removeSeed()
	opts.Seed = seed
	res := &ReplayResult{runs: &replayRuns{sum: sum, codec: rec.Codec(), opts: opts}}
	if err := res.run(ctx, rec.Launch(r.Build), fx, set, r); err != nil {
		res.Close()
		return nil, err
	}
	return res, nil
}

// open skims the fixture and checks the request against it: the replay's
// options, and the invariants that judge its failure (nil unless the
// failure is an invariant's).
func (r ReplayRequest) open() (*Opened, replay.Options, *invariants.Set, error) {
	rec, err := Open(r.Fixture, ToReplay)
	if err != nil {
		return nil, replay.Options{}, nil, err
	}
	if w := rec.Warning(); w != nil && r.Warn != nil {
		r.Warn(w)
	}
	fx, sum := rec.Records(), rec.Summary()
	if r.Runs < 1 {
		return nil, replay.Options{}, nil, usagef("", "--runs %d: need at least 1", r.Runs)
	}
	if err := CheckTimeouts(map[string]time.Duration{"--step-timeout": r.StepTimeout, "--start-timeout": r.StartTimeout}); err != nil {
		return nil, replay.Options{}, nil, err
	}
	if err := rec.CheckLaunch(r.TrustLaunch, r.Build); err != nil {
		return nil, replay.Options{}, nil, err
	}
	opts := rec.ReplayOptions(r.StepTimeout, r.StartTimeout)
	opts.RealTime = r.RealTime
	if f := fx.Failure; f != nil && (f.Step < 1 || f.Step > sum.Steps) {
		return nil, replay.Options{}, nil, fmt.Errorf("fixture %s: its failure is marked at step %d, but it has %d steps: mark the failing step again with kavach mark",
			fx.Path, f.Step, sum.Steps)
	}
	set, err := replayInvariants(r.Invariants, fx)
	if err != nil {
		return nil, replay.Options{}, nil, err
	}
	return rec, opts, set, nil
}

// run replays the runs and judges them (replayRuns.judge), keeping each
// run's steps for PrintJSON when the request asks for JSON.
func (res *ReplayResult) run(ctx context.Context, l kavach.Launch, fx *fixtures.Fixture, set *invariants.Set, r ReplayRequest) error {
	runs := res.runs
	if err := runs.replay(ctx, l, fx.Path, r.Runs); err != nil {
		return err
	}
	violated, err := runs.violated(set, fx.Failure)
	if err != nil {
		return err
	}
	if r.JSON {
		if res.parts, err = newJSONParts(len(runs.spills)); err != nil {
			return err
		}
	}
	res.violated = violated
	res.Verification, res.noise, res.seen, res.counts, err = runs.judge(fx.Failure, violated, res.parts)
	if err != nil {
		return err
	}
	// A fixture without the state of the service it was recorded in
	// front of: a difference every run agrees on is that state missing.
	if fx.StateLacking() {
		before := 0
		if fx.Failure != nil {
			before = fx.Failure.Step
		}
		if f, ok := replay.MissingState(res.seen, before); ok {
			res.missing = replay.MissingStateReason(f)
			res.Verification.Reproduced = false
			if v := &res.Verification; v.FirstDifferent == 0 || f.Step < v.FirstDifferent {
				v.FirstDifferent = f.Step
			}
		}
	}
	// A difference, noise included, at a step whose answer may depend on
	// the order of another client's write: said as that.
	for _, f := range res.seen {
		if fx.State.OrderUnknownAt(f.Step) {
			res.order = fmt.Sprintf("step %d %s differs from the recording, and it may read what another client wrote in an order the recording could not know", f.Step, f.Path)
			res.Verification.Reproduced = false
			if v := &res.Verification; v.FirstDifferent == 0 || f.Step < v.FirstDifferent {
				v.FirstDifferent = f.Step
			}
			break
		}
	}
	if v := &res.Verification; res.order == "" && v.FirstDifferent > 0 && fx.State.OrderUnknownAt(v.FirstDifferent) {
		res.order = fmt.Sprintf("step %d differs from the recording, and it may read what another client wrote in an order the recording could not know", v.FirstDifferent)
	}
	return nil
}

// replayInvariants reads the invariants file given (whether or not the
// failure needs it: a wrong path is a mistake to say, not to ignore), and
// returns the invariants that judge the fixture's failure: nil unless
// the failure is an invariant's.
func replayInvariants(file string, fx *fixtures.Fixture) (*invariants.Set, error) {
	if file != "" {
		if err := pathcheck.File(file); err != nil {
			return nil, fmt.Errorf("--invariants: %w", err)
		}
		if _, err := invariants.Load(file); err != nil {
			return nil, err
		}
	}
	f := fx.Failure
	if f == nil || f.Oracle.Invariant == "" {
		return nil, nil
	}
	set, err := LoadInvariants(file, fx)
	if err != nil {
		return nil, err
	}
	if set == nil || !set.Has(f.Oracle.Invariant) {
		return nil, usagef("", "fixture %s: its failure is invariant %q, which no invariants file declares: pass --invariants FILE", fx.Path, f.Oracle.Invariant)
	}
	return set, nil
}

// replay replays the fixture at path n times, each run into a spill of
// its own, the last of two or more perturbed.
func (r *replayRuns) replay(ctx context.Context, l kavach.Launch, path string, n int) error {
	src := replay.Shared(replay.File(path)) // one plan for every run
	for i := 0; i < n; i++ {
		// The last run of two or more perturbed, as kavach diff
		// replays the old build: an answer that depends on the
		// machine's load shows as noise.
		o := r.opts
		o.Perturb = n >= 2 && i == n-1
		sp, err := replay.NewSpill("")
		if err != nil {
			return err
		}
		r.spills = append(r.spills, sp)
		tr, err := replay.Stream(ctx, l, src, o, sp)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			// Stopped by a signal: an interrupted run is no evidence,
			// and no run follows it.
			return fmt.Errorf("interrupted during run %d of %d: %w", i+1, n, context.Cause(ctx))
		}
		r.traces = append(r.traces, tr)
	}
	return nil
}

// violated says whether the failure's invariant, of set, is violated at a
// step of the first run; nil when set is (no invariant failure). An
// invariant may look at every earlier step: the first run is read back
// whole to judge it.
func (r *replayRuns) violated(set *invariants.Set, f *kavach.Failure) (func(int) bool, error) {
	if set == nil {
		return nil, nil
	}
	tr, err := r.whole(0)
	if err != nil {
		return nil, err
	}
	v := grade.Violated(set, r.codec, tr)
	return func(n int) bool { return slices.Contains(v[n], f.Oracle.Invariant) }, nil
}

// replayRuns are the runs of kavach replay, spilled, and what reads them
// back beside the recording.
type replayRuns struct {
	sum    *fixtures.Summary
	codec  kavach.Integration
	opts   replay.Options
	spills []*replay.Spill
	traces []*replay.Trace // without steps: they are in the spills
}

func (r *replayRuns) close() {
	for _, sp := range r.spills {
		sp.Close()
	}
}

// each calls fn with every step in order: the recording's, as a trace
// step and as recorded, and each run's.
func (r *replayRuns) each(fn func(rec replay.StepResult, st kavach.Step, runs []replay.StepResult) error) error {
	name := func(i int) string { return fmt.Sprintf("run %d", i+1) }
	return replay.ReadBack(r.sum.EachStep, r.spills, r.opts.Integration, name, func(st kavach.Step, got []replay.StepResult) error {
		return fn(replay.RecordedStep(st, r.opts.Integration), st, got)
	})
}

// judge finds the noise and judges each step, in one pass over the runs,
// by the rules kavach diff holds its old build to: the noise is where a
// run differs from the recording (what diff finds over its old build's
// replays), listed in seen with the values it took; the first run's steps
// are judged with it (replay.CheckStep). With parts (--json), each run's
// steps and the judgments are written out in that same pass, to files of
// their own, and copied into the output after the noise it starts with:
// each spill is read once.
func (r *replayRuns) judge(failure *kavach.Failure, violated func(int) bool, parts *jsonParts) (replay.Verification, replay.Noise, []replay.NoiseField, map[string]int, error) {
	noise := replay.Noise{}
	seen := []replay.NoiseField{}
	v := replay.Verification{Reproduced: true}
	counts := map[string]int{}
	err := r.each(func(rec replay.StepResult, _ kavach.Step, got []replay.StepResult) error {
		noise.AddStep(rec, got...)
		seen = append(seen, noise.SeenStep(rec, got...)...)
		ch := replay.CheckStep(rec, got[0], failure, noise, violated)
		v.Count(ch)
		counts[ch.Status]++
		if parts != nil {
			return parts.add(got, ch)
		}
		return nil
	})
	return v, noise, seen, counts, err
}

// whole is run i read back into memory, requests included.
func (r *replayRuns) whole(i int) (*replay.Trace, error) {
	tr := *r.traces[i]
	err := r.each(func(_ replay.StepResult, st kavach.Step, got []replay.StepResult) error {
		s := got[i]
		s.Request = append([]byte(nil), st.Request.Data...)
		tr.Steps = append(tr.Steps, s)
		return nil
	})
	return &tr, err
}

// print writes the table of kavach replay (ReplayResult.Print).
func (r *replayRuns) print(w io.Writer, v replay.Verification, noise replay.Noise, seen []replay.NoiseField, counts map[string]int, violated func(int) bool) error {
	tr, sum := r.traces[0], r.sum
	dur := "?"
	if sum.End != nil {
		dur = sum.End.Duration.Round(time.Millisecond).String()
	}
	fmt.Fprintf(w, "replay    %s\nfixture   %s (%d steps, recorded over %s)\nclock     %s\nnetwork   %s\nwall      %s\n",
		tr.Build.Path, sum.Path, sum.Steps, dur, tr.Clock, networkLine(tr.Network), tr.Wall.Round(time.Millisecond))
	if tr.Stopped != "" {
		fmt.Fprintf(w, "stopped   %s\n", tr.Stopped)
	}
	if len(seen) > 0 {
		var parts []string
		for _, f := range seen {
			parts = append(parts, fmt.Sprintf("step %d %s", f.Step, f.Path))
		}
		fmt.Fprintf(w, "noise     %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	bw := bufio.NewWriter(w) // a write a line would be a system call a step
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tRECORDED\tREPLAYED\tREQUEST")
	err := r.each(func(rec replay.StepResult, st kavach.Step, got []replay.StepResult) error {
		c := replay.CheckStep(rec, got[0], sum.Failure, noise, violated)
		recd, out := c.Recorded.String(), c.Outcome.String()
		if c.Status == replay.StatusNotRun {
			out = "-"
		}
		if c.Status == replay.StatusForeign {
			recd = "-" // another client's: its reply was not recorded
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.Step, c.Status, recd, out, r.codec.DescribeRequest(st.Request.Data, 48))
		for _, d := range c.Diffs {
			// Under REQUEST, the last column: a line with fewer cells
			// would end the columns' block, and the rows after it would
			// be aligned apart from those before.
			fmt.Fprintf(tw, "\t\t\t\t  %s: want %s, got %s\n", d.Path, cut.String(d.Want, 80), cut.String(d.Got, 80))
		}
		for _, d := range c.Noise {
			fmt.Fprintf(tw, "\t\t\t\t  %s: want %s, got %s (noise)\n", d.Path, cut.String(d.Want, 80), cut.String(d.Got, 80))
		}
		if c.Step%4096 == 0 {
			// The table is aligned in blocks of 4,096 steps: a long
			// fixture's is not held whole.
			return tw.Flush()
		}
		return nil
	})
	tw.Flush()
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	var parts []string
	for _, s := range []string{replay.StatusEqual, replay.StatusNoise, replay.StatusReproduced, replay.StatusDifferent, replay.StatusNotFailed, replay.StatusNotRun, replay.StatusAfterFailed, replay.StatusContained, replay.StatusForeign} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	result := "reproduced"
	if !v.Reproduced {
		result = fmt.Sprintf("not reproduced, from step %d", v.FirstDifferent)
	}
	fmt.Fprintf(w, "result    %s (%s)\n", result, strings.Join(parts, ", "))
	return nil
}

// networkLine is the replay's network line: the trace's mode
// (replay.NetworkIsolated, ...), said for a person.
func networkLine(mode string) string {
	switch {
	case mode == "":
		return launch.Network()
	case mode == replay.NetworkIsolated:
		return "isolated (a network namespace of its own, loopback only)"
	case strings.HasPrefix(mode, replay.NetworkContained):
		return mode + ": requests that rebind, replicate, migrate or load code answered by Kavach, not sent"
	}
	return mode
}

// jsonParts are the arrays of kavach replay --json made in the pass that
// reads the spills: each run's steps, and the verification's, each in a
// file of its own until printJSON copies them out.
type jsonParts struct {
	files []*os.File // one per run, and the verification's last
	bufs  []*bufio.Writer
	n     int // steps written
}

func newJSONParts(runs int) (*jsonParts, error) {
	p := &jsonParts{}
	for i := 0; i <= runs; i++ {
		f, err := os.CreateTemp("", "kavach-json-")
		if err != nil {
			p.close()
			return nil, err
		}
		os.Remove(f.Name())
		p.files, p.bufs = append(p.files, f), append(p.bufs, bufio.NewWriterSize(f, 64<<10))
	}
	return p, nil
}

// add writes one step of every run, and its judgment, each as an array
// element at the depth the output nests it.
func (p *jsonParts) add(got []replay.StepResult, check any) error {
	p.n++
	put := func(w *bufio.Writer, prefix string, x any) error {
		b, err := json.MarshalIndent(x, prefix, "  ")
		if err != nil {
			return err
		}
		if p.n > 1 {
			w.WriteString(",")
		}
		w.WriteString("\n" + prefix)
		_, err = w.Write(b)
		return err
	}
	for i, s := range got {
		if err := put(p.bufs[i], "        ", s); err != nil {
			return err
		}
	}
	return put(p.bufs[len(got)], "      ", check)
}

// copyOut writes part i to w.
func (p *jsonParts) copyOut(w io.Writer, i int) error {
	if err := p.bufs[i].Flush(); err != nil {
		return err
	}
	if _, err := p.files[i].Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(w, p.files[i])
	return err
}

func (p *jsonParts) close() {
	for _, f := range p.files {
		f.Close()
	}
}

// printJSON writes {"noise", "traces", "verification"} as a JSON object,
// each run's steps and the verification's copied from parts.
func (r *replayRuns) printJSON(w io.Writer, parts *jsonParts, v replay.Verification, noise []replay.NoiseField) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	put := func(prefix string, x any) error {
		b, err := json.MarshalIndent(x, prefix, "  ")
		if err != nil {
			return err
		}
		_, err = bw.Write(b)
		return err
	}
	bw.WriteString("{\n  \"noise\": ")
	if err := put("  ", noise); err != nil {
		return err
	}
	bw.WriteString(",\n  \"traces\": [")
	for i, tr := range r.traces {
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		// The trace's fields, its steps spliced in where "steps" is null.
		b, err := json.MarshalIndent(tr, "    ", "  ")
		if err != nil {
			return err
		}
		head, tail, ok := bytes.Cut(b, []byte(`"steps": null`))
		if !ok {
			return fmt.Errorf("replay: trace %d has no steps field", i+1)
		}
		bw.Write(head)
		bw.WriteString(`"steps": [`)
		if err := parts.copyOut(bw, i); err != nil {
			return err
		}
		if parts.n > 0 {
			bw.WriteString("\n      ")
		}
		bw.WriteString("]")
		bw.Write(tail)
	}
	bw.WriteString("\n  ],\n  \"verification\": {\n    \"reproduced\": ")
	fmt.Fprint(bw, v.Reproduced)
	bw.WriteString(",\n    \"steps\": [")
	if err := parts.copyOut(bw, len(r.traces)); err != nil {
		return err
	}
	if parts.n > 0 {
		bw.WriteString("\n    ")
	}
	bw.WriteString("]")
	if v.FirstDifferent != 0 {
		fmt.Fprintf(bw, ",\n    \"first_different\": %d", v.FirstDifferent)
	}
	bw.WriteString("\n  }\n}\n")
	return bw.Flush()
}
