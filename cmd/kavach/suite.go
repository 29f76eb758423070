package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/htmlreport"
)

// fixtureArgs are the fixtures kavach diff was given: the arguments, a
// directory among them standing for its .kavach files in name order.
// suite is true for more than one fixture, or any directory.
func fixtureArgs(args []string) (fixtures []string, suite bool, err error) {
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			fixtures = append(fixtures, a) // checkFixtures says what is wrong with it
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
		fixtures = append(fixtures, found...)
	}
	return fixtures, suite || len(fixtures) > 1, nil
}

// runSuite grades one build pair against every fixture at once, as
// runDiff grades one, their replays sharing one pool of -j places; the
// first fixture (in argument order) Kavach cannot grade stops it.
// r.Progress is told of each fixture graded.
func runSuite(ctx context.Context, r diffRequest, fixtures []string) (*grade.SuiteReport, error) {
	diffs := make([]grade.Diff, len(fixtures))
	for i, f := range fixtures {
		fr := r
		fr.Fixture = f
		d, err := prepareDiff(fr)
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

// suiteCommand is kavach diff with several fixtures: it grades them,
// writes the suite's report, prints it and exits with the worst status.
func suiteCommand(c *cli.Context, r diffRequest, fixtures []string) error {
	s, err := runSuite(c.Context, r, fixtures)
	if err != nil {
		return belowFloorUsage(err, "FIXTURE")
	}
	out, err := reportPath(c.String("out"))
	if err != nil {
		return err
	}
	if err := writeReport(out, s); err != nil {
		return err
	}
	if err := writeHTML(c, func(w io.Writer) error { return htmlreport.Suite(w, s) }); err != nil {
		return err
	}
	switch {
	case c.Bool("json"):
		fmt.Fprintf(c.App.ErrWriter, "kavach: report: %s\n", out)
		if err := printJSON(c.App.Writer, s); err != nil {
			return err
		}
	case c.Bool("brief"):
		fmt.Fprintf(c.App.Writer, "%s %s\n", s.Verdict, out)
	default:
		printSuite(c.App.Writer, s, r.Old, r.New, fixtures, out)
	}
	return verdictExit(s.Parts.Kind)
}

// printSuite prints a suite's verdict: the headline alone on the first
// line, one line per fixture (its verdict, then its path), then what
// kavach diff prints of the headline fixture, and where the report is.
func printSuite(w io.Writer, s *grade.SuiteReport, old, new string, fixtures []string, reportPath string) {
	fmt.Fprintln(w, s.Verdict)
	width := 0
	for _, r := range s.Reports {
		width = max(width, len(r.Verdict))
	}
	for i, r := range s.Reports {
		fmt.Fprintf(w, "%-*s  %s\n", width, r.Verdict, fixtures[i])
	}
	if h := s.Headline; h >= 0 {
		fmt.Fprintf(w, "\n%s: %s\n", fixtures[h], s.Reports[h].Verdict)
		printDiffBody(w, s.Reports[h], []string{old, new, fixtures[h]}, reportPath)
	}
	fmt.Fprintf(w, "report: %s (one report per fixture)\n", reportPath)
}

// verdictSuite is kavach verdict on a suite's report: every fixture's
// verdict and the headline, re-derived from the evidence.
func verdictSuite(c *cli.Context, path string, b []byte) error {
	var s grade.SuiteReport
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("report %s: not a kavach diff report: %w", path, err)
	}
	if slices.Contains(s.Reports, nil) {
		return fmt.Errorf("report %s: a suite's report with an empty fixture report", path)
	}
	headline, parts := grade.DeriveSuite(&s)
	out := verdictJSON{Report: path, Verdict: s.Verdict, Derived: headline.String()}
	agrees := out.Derived == out.Verdict
	for i, r := range s.Reports {
		f := verdictJSON{Report: r.Fixture.Path, Verdict: r.Verdict, Derived: parts[i].String()}
		f.Agrees = f.Derived == f.Verdict
		agrees = agrees && f.Agrees
		out.Fixtures = append(out.Fixtures, f)
	}
	out.Agrees = agrees
	if c.Bool("json") {
		if err := printJSON(c.App.Writer, out); err != nil {
			return err
		}
	} else {
		say := func(v verdictJSON, what string) {
			if v.Agrees {
				fmt.Fprintf(c.App.Writer, "agrees: %s%s\n", v.Verdict, what)
			} else {
				fmt.Fprintf(c.App.Writer, "disagrees: %s says %s, its evidence gives %s\n", strings.TrimPrefix(what, " "), v.Verdict, v.Derived)
			}
		}
		head := out
		head.Agrees = out.Derived == out.Verdict
		say(head, " (the suite)")
		for _, f := range out.Fixtures {
			say(f, " "+f.Report)
		}
	}
	if !agrees {
		return &verdictError{code: exitRed}
	}
	return nil
}
