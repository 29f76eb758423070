package main

import (
	"fmt"
	"github.com/kavach-dev/kavach/internal/jsonout"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/htmlreport"
	"github.com/kavach-dev/kavach/textreport"
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
		if err := jsonout.Print(c.App.Writer, s); err != nil {
			return err
		}
	case c.Bool("brief"):
		fmt.Fprintf(c.App.Writer, "%s %s\n", s.Verdict, out)
	default:
		textreport.Suite(c.App.Writer, s, r.Old, r.New, fixtures, out)
	}
	return verdictExit(s.Parts.Kind)
}
