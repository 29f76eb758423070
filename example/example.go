// Package example grades the candidate fixes of an example incident
// (examples/<incident>/example.json) two ways, the hidden test written for
// the failure alone and kavach diff, and keeps the two verdicts apart:
// their agreement is computed, never a merged verdict. It is `kavach
// grade`; it grades each candidate with package grading, as kavach diff does.
package example

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/buildscript"
	"github.com/kavach-dev/kavach/invariants"
	"github.com/kavach-dev/kavach/record"
)

// Example is an examples/<incident>/example.json: how to build the old
// build and the candidates, how the incident was recorded, and the hidden
// test. Paths are relative to the example's folder.
type Example struct {
	Description string `json:"description"`
	Protocol    string `json:"protocol"`
	// Build is a script that takes patch files and prints the path of a
	// build made with them (scripts/redis-build.sh, scripts/axum-build.sh).
	Build string   `json:"build"`
	Old   []string `json:"old"` // the patches that make the old build
	// Client drives the service around the bug; it gets the address to
	// talk to as its first argument. Its traffic is the fixture.
	Client string `json:"client"`
	// Args are the old build's own arguments when recording.
	Args []string `json:"args,omitempty"`
	// Failure, when the recording cannot find it itself (a wrong answer),
	// is marked after recording; Invariants is embedded.
	Failure    *Failure `json:"failure,omitempty"`
	Invariants string   `json:"invariants,omitempty"`
	// HiddenTest is the test a task author would write for the failure
	// alone: it gets a build's path and exits 0 when it passes.
	HiddenTest string      `json:"hidden_test"`
	Candidates []Candidate `json:"candidates"`
}

// Failure is marked on the recorded fixture when the recording cannot
// find it itself.
type Failure struct {
	Step   int    `json:"step"`
	Oracle string `json:"oracle"`
}

// Candidate is one candidate fix.
type Candidate struct {
	Name  string `json:"name"`
	Patch string `json:"patch"` // applied on top of the old build's patches
	What  string `json:"what"`
}

// Row is one candidate graded both ways. The two verdicts are kept
// apart: agreement is computed, never a merged verdict.
type Row struct {
	Candidate  string `json:"candidate"`
	What       string `json:"what"`
	Hidden     string `json:"hidden_test"` // "pass" or "fail"
	Kavach     string `json:"kavach"`      // the verdict, or "error: ..."
	KavachExit int    `json:"kavach_exit"`
	Agree      bool   `json:"agree"` // hidden pass exactly when kavach says fixed
	HiddenMS   int64  `json:"hidden_ms"`
	KavachMS   int64  `json:"kavach_ms"`
	BuildMS    int64  `json:"build_ms"`
	Report     string `json:"report"`
}

// Options are how Grade grades: kavach grade's flags.
type Options struct {
	// Record records the incident again even if fixture.kavach exists.
	Record bool
	// Diff is how each candidate is graded, as kavach diff grades it: its
	// variants, seed and jobs. Old, New and Fixture are Grade's to set;
	// zero timeouts are kavach diff's defaults (5s a step, 10s a start).
	Diff grading.Request
	// Log, if set, is told what is happening, one line at a time, each
	// starting "kavach grade: ".
	Log io.Writer
}

// Result is an example graded: a row per candidate.
type Result struct {
	Example     string `json:"example"`
	Description string `json:"description"`
	Rows        []Row  `json:"rows"`
	Agree       int    `json:"agree"`
	Candidates  int    `json:"candidates"`
	TotalMS     int64  `json:"total_ms"`
}

// Grade builds the example's old build and every candidate, records the
// incident if its fixture.kavach is missing (or opts.Record), and runs
// both graders on each candidate. Reports go to the temporary directory.
func Grade(ctx context.Context, dir string, opts Options) (*Result, error) {
	ex, err := Load(dir)
	if err != nil {
		return nil, err
	}
	log := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, "kavach grade: "+format+"\n", args...)
		}
	}
	start := time.Now()
	log("%s: building the old build", dir)
	old, err := ex.build(dir, nil)
	if err != nil {
		return nil, err
	}
	fixture := filepath.Join(dir, "fixture"+fixtures.Ext)
	if _, err := os.Stat(fixture); err != nil || opts.Record {
		log("recording the incident: %s against the old build", ex.Client)
		if err := ex.record(ctx, dir, old, fixture); err != nil {
			return nil, err
		}
	}
	// The candidates share the old build's replays of the variants: each
	// runs on the old build once (grade.Memo; each report marks them).
	opts.Diff.Memo = grade.NewMemo()
	var rows []Row
	for _, cand := range ex.Candidates {
		row := Row{Candidate: cand.Name, What: cand.What}
		t0 := time.Now()
		log("candidate %s: building", cand.Name)
		build, err := ex.build(dir, &cand)
		if err != nil {
			return nil, err
		}
		row.BuildMS = time.Since(t0).Milliseconds()
		t1 := time.Now()
		row.Hidden = "pass"
		if err := ex.hiddenTest(ctx, dir, build); err != nil {
			row.Hidden = "fail"
		}
		row.HiddenMS = time.Since(t1).Milliseconds()
		t2 := time.Now()
		log("candidate %s: kavach diff", cand.Name)
		row.Report = filepath.Join(os.TempDir(), fmt.Sprintf("kavach-grade-%s-%s.json", filepath.Base(dir), cand.Name))
		rep, err := grading.Grade(ctx, opts.diff(old, build, fixture))
		switch {
		case err != nil:
			row.Kavach, row.KavachExit = "error: "+firstLine(err.Error()), exitCannot
		default:
			row.Kavach, row.KavachExit = rep.Verdict, grading.ExitStatus(rep.Parts.Kind)
			if err := grading.WriteReport(row.Report, rep); err != nil {
				return nil, err
			}
		}
		row.KavachMS = time.Since(t2).Milliseconds()
		row.Agree = (row.Hidden == "pass") == (row.Kavach == grade.Fixed)
		rows = append(rows, row)
	}
	return &Result{Example: dir, Description: ex.Description, Rows: rows, Agree: countAgree(rows),
		Candidates: len(rows), TotalMS: time.Since(start).Milliseconds()}, nil
}

// exitCannot is kavach diff's exit status when it could not grade.
const exitCannot = 2

// diff is the request grading one candidate: opts.Diff with the builds,
// the fixture and kavach diff's default timeouts.
func (opts Options) diff(old, new, fixture string) grading.Request {
	r := opts.Diff
	r.Old, r.New, r.Fixture = old, new, fixture
	if r.StepTimeout == 0 {
		r.StepTimeout = 5 * time.Second
	}
	if r.StartTimeout == 0 {
		r.StartTimeout = 10 * time.Second
	}
	return r
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func countAgree(rows []Row) int {
	n := 0
	for _, r := range rows {
		if r.Agree {
			n++
		}
	}
	return n
}

// PrintTable prints the two graders' verdicts side by side, then how
// often they agree and where they do not.
func (r *Result) PrintTable(w io.Writer) {
	rows, took := r.Rows, time.Duration(r.TotalMS)*time.Millisecond
	fmt.Fprintf(w, "%s\n%s\n\n", r.Example, r.Description)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CANDIDATE\tHIDDEN TEST\tKAVACH DIFF\tAGREE\tHIDDEN\tKAVACH")
	for _, r := range rows {
		agree := "yes"
		if !r.Agree {
			agree = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1fs\t%.1fs\n", r.Candidate, r.Hidden, r.Kavach, agree,
			float64(r.HiddenMS)/1000, float64(r.KavachMS)/1000)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nagree on %d of %d candidates (hidden test passes exactly when kavach says fixed)\n", countAgree(rows), len(rows))
	for _, r := range rows {
		if !r.Agree {
			fmt.Fprintf(w, "  %s (%s): hidden test %s, kavach %s\n", r.Candidate, r.What, r.Hidden, r.Kavach)
		}
	}
	fmt.Fprintf(w, "took %s (builds cached under ~/.cache/kavach)\n", took.Round(100*time.Millisecond))
}

// Load reads dir/example.json.
func Load(dir string) (*Example, error) {
	b, err := os.ReadFile(filepath.Join(dir, "example.json"))
	if err != nil {
		return nil, fmt.Errorf("example %s: %w", dir, err)
	}
	var ex Example
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ex); err != nil {
		return nil, fmt.Errorf("example %s/example.json: %w", dir, err)
	}
	if ex.Build == "" || ex.Client == "" || ex.HiddenTest == "" || len(ex.Candidates) == 0 {
		return nil, fmt.Errorf("example %s/example.json: build, client, hidden_test and candidates are required", dir)
	}
	return &ex, nil
}

// build runs the example's build script with the old patches, and the
// candidate's on top, and returns the build's path.
func (ex *Example) build(dir string, cand *Candidate) (string, error) {
	var patches []string
	for _, p := range ex.Old {
		patches = append(patches, filepath.Join(dir, p))
	}
	if cand != nil {
		patches = append(patches, filepath.Join(dir, cand.Patch))
	}
	script, err := filepath.Abs(filepath.Join(dir, ex.Build))
	if err != nil {
		return "", err
	}
	return buildscript.Run(script, patches...)
}

// hiddenTest runs the hidden test on a build; nil means it passed.
func (ex *Example) hiddenTest(ctx context.Context, dir, build string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, ex.HiddenTest), build)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	return cmd.Run()
}

// record records the incident: the old build started by a recording
// session, the example's client run against the proxy, the recording
// ended when the build dies or, after the client is done, stopped; then
// the failure marked and the invariants embedded when the example says.
func (ex *Example) record(ctx context.Context, dir, old, out string) error {
	if !grading.Speaks(ex.Protocol) {
		return fmt.Errorf("example %s: protocol %q", dir, ex.Protocol)
	}
	codec := grading.Integration(ex.Protocol, 10*time.Second)
	os.Remove(out)
	s := record.Session{Out: out, Launch: &kavach.Launch{Path: old, Args: ex.Args},
		Proxy: record.Options{Codec: codec, Redactor: codec.Abilities().Redaction}}
	rec, err := s.Go(ctx, ex.Protocol)
	if err != nil {
		return err
	}
	client := exec.CommandContext(ctx, filepath.Join(dir, ex.Client), rec.Addr)
	client.Stdout, client.Stderr = io.Discard, io.Discard
	clientErr := client.Run()
	// The recording ends by itself when the build died; else stop it once
	// the last closes have reached the proxy.
	if _, err := rec.Wait(300 * time.Millisecond); err != nil {
		return err
	}
	if clientErr != nil {
		return fmt.Errorf("example %s: client %s: %w", dir, ex.Client, clientErr)
	}
	if ex.Failure == nil && ex.Invariants == "" {
		return nil
	}
	var a2 fixtures.Amendment
	if ex.Invariants != "" {
		src, err := os.ReadFile(filepath.Join(dir, ex.Invariants))
		if err != nil {
			return err
		}
		if _, err := invariants.Parse(ex.Invariants, string(src)); err != nil {
			return err
		}
		a2.Invariants = &fixtures.Invariants{Name: ex.Invariants, Source: string(src)}
	}
	if ex.Failure != nil {
		o, err := kavach.ParseOracle(ex.Failure.Oracle)
		if err != nil {
			return err
		}
		fx, err := fixtures.Load(out)
		if err != nil {
			return err
		}
		f, err := record.FailureAt(fx, codec, ex.Failure.Step, o)
		if err != nil {
			return err
		}
		a2.Failure = &f
	}
	return fixtures.Amend(out, a2)
}
