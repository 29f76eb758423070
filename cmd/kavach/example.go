package main

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

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/internal/buildscript"
	"github.com/kavach-dev/kavach/invariants"
	"github.com/kavach-dev/kavach/record"
)

// example is an examples/<incident>/example.json: how to build the old
// build and the candidates, how the incident was recorded, and the hidden
// test. Paths are relative to the example's folder.
type example struct {
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
	Failure    *exampleFailure `json:"failure,omitempty"`
	Invariants string          `json:"invariants,omitempty"`
	// HiddenTest is the test a task author would write for the failure
	// alone: it gets a build's path and exits 0 when it passes.
	HiddenTest string             `json:"hidden_test"`
	Candidates []exampleCandidate `json:"candidates"`
}

type exampleFailure struct {
	Step   int    `json:"step"`
	Oracle string `json:"oracle"`
}

type exampleCandidate struct {
	Name  string `json:"name"`
	Patch string `json:"patch"` // applied on top of the old build's patches
	What  string `json:"what"`
}

// gradeRow is one candidate graded both ways. The two verdicts are kept
// apart: agreement is computed, never a merged verdict.
type gradeRow struct {
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

func gradeCommand() *cli.Command {
	return &cli.Command{
		Name:      "grade",
		Usage:     "grade an example's candidate fixes two ways: its hidden test and kavach diff",
		ArgsUsage: "EXAMPLE_DIR",
		Description: withExample("Builds the example's old build and every candidate fix (example.json), records the\n"+
			"incident if its fixture.kavach is missing (or with --record), then runs both graders on each\n"+
			"candidate — the hidden test written for the failure alone, and kavach diff — and prints a\n"+
			"table with the two verdicts in separate columns, then how often they agree.",
			"kavach grade examples/redis-getrange-crash"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the table as JSON"},
			&cli.BoolFlag{Name: "record", Usage: "record the incident again even if fixture.kavach exists"},
			&cli.IntFlag{Name: "j", Usage: "replays at once for each diff (default: the number of cores)"},
			&cli.IntFlag{Name: "variants", Value: 64, Usage: "variants per diff"},
			&cli.IntFlag{Name: "min-variants", Value: 10, Usage: "reproducing variants needed for fixed"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "variant seed"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			dir, err := oneArg(c, "EXAMPLE_DIR")
			if err != nil {
				return err
			}
			ex, err := loadExample(dir)
			if err != nil {
				return err
			}
			log := func(format string, args ...any) { fmt.Fprintf(c.App.ErrWriter, "kavach grade: "+format+"\n", args...) }
			start := time.Now()
			log("%s: building the old build", dir)
			old, err := ex.build(dir, nil)
			if err != nil {
				return err
			}
			fixture := filepath.Join(dir, "fixture"+fixtures.Ext)
			if _, err := os.Stat(fixture); err != nil || c.Bool("record") {
				log("recording the incident: %s against the old build", ex.Client)
				if err := ex.record(c.Context, dir, old, fixture); err != nil {
					return err
				}
			}
			var rows []gradeRow
			for _, cand := range ex.Candidates {
				row := gradeRow{Candidate: cand.Name, What: cand.What}
				t0 := time.Now()
				log("candidate %s: building", cand.Name)
				build, err := ex.build(dir, &cand)
				if err != nil {
					return err
				}
				row.BuildMS = time.Since(t0).Milliseconds()
				t1 := time.Now()
				row.Hidden = "pass"
				if err := ex.hiddenTest(c.Context, dir, build); err != nil {
					row.Hidden = "fail"
				}
				row.HiddenMS = time.Since(t1).Milliseconds()
				t2 := time.Now()
				log("candidate %s: kavach diff", cand.Name)
				row.Report = filepath.Join(os.TempDir(), fmt.Sprintf("kavach-grade-%s-%s.json", filepath.Base(dir), cand.Name))
				rep, err := runDiff(c.Context, diffRequest{Old: old, New: build, Fixture: fixture,
					Variants: c.Int("variants"), MinVariants: c.Int("min-variants"), Seed: c.Uint64("seed"), Jobs: c.Int("j"),
					StepTimeout: 5 * time.Second, StartTimeout: 10 * time.Second})
				switch {
				case err != nil:
					row.Kavach, row.KavachExit = "error: "+firstLine(err.Error()), exitCannot
				default:
					row.Kavach, row.KavachExit = rep.Verdict, exitCode(verdictExit(rep.Parts.Kind))
					if err := writeReport(row.Report, rep); err != nil {
						return err
					}
				}
				row.KavachMS = time.Since(t2).Milliseconds()
				row.Agree = (row.Hidden == "pass") == (row.Kavach == grade.Fixed)
				rows = append(rows, row)
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"example": dir, "description": ex.Description, "rows": rows,
					"agree": countAgree(rows), "candidates": len(rows), "total_ms": time.Since(start).Milliseconds()})
			}
			printGradeTable(c.App.Writer, dir, ex, rows, time.Since(start))
			return nil
		},
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func countAgree(rows []gradeRow) int {
	n := 0
	for _, r := range rows {
		if r.Agree {
			n++
		}
	}
	return n
}

func printGradeTable(w io.Writer, dir string, ex *example, rows []gradeRow, took time.Duration) {
	fmt.Fprintf(w, "%s\n%s\n\n", dir, ex.Description)
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

func loadExample(dir string) (*example, error) {
	b, err := os.ReadFile(filepath.Join(dir, "example.json"))
	if err != nil {
		return nil, fmt.Errorf("example %s: %w", dir, err)
	}
	var ex example
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
func (ex *example) build(dir string, cand *exampleCandidate) (string, error) {
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
func (ex *example) hiddenTest(ctx context.Context, dir, build string) error {
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
func (ex *example) record(ctx context.Context, dir, old, out string) error {
	in, ok := integrations()[ex.Protocol]
	if !ok {
		return fmt.Errorf("example %s: protocol %q", dir, ex.Protocol)
	}
	os.Remove(out)
	s := record.Session{Out: out, Launch: &kavach.Launch{Path: old, Args: ex.Args}, Launcher: in.launcher(10 * time.Second),
		Proxy: record.Options{Codec: in.codec}}
	if r, ok := in.codec.(kavach.Redactor); ok {
		s.Proxy.Redactor = r
	}
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
		f, err := record.FailureAt(fx, in.codec, ex.Failure.Step, o)
		if err != nil {
			return err
		}
		a2.Failure = &f
	}
	return fixtures.Amend(out, a2)
}
