package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/htmlreport"
)

// suiteCommand is kavach diff with several fixtures: it grades them,
// writes the suite's report, prints it and exits with the worst status.
func suiteCommand(c *cli.Context, r grading.Request, fixtures []string) error {
	s, err := grading.GradeSuite(c.Context, r, fixtures)
	if err != nil {
		return belowFloorUsage(err, "FIXTURE")
	}
	out, err := grading.ReportPath(c.String("out"))
	if err != nil {
		return err
	}
	if err := grading.WriteReport(out, s); err != nil {
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
		grading.PrintSuite(c.App.Writer, s, r.Old, r.New, fixtures, out)
	}
	return verdictExit(s.Parts.Kind)
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
