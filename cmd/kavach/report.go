package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/htmlreport"
	"github.com/kavach-dev/kavach/internal/pathcheck"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write a report as one HTML page a person can look at",
		ArgsUsage: "REPORT|JOB-DIR",
		Description: withExample("Reads a report written by 'kavach diff' (one fixture's or a suite's) and writes it\n"+
			"as one self-contained HTML page: the verdict and what it means, a timeline of the\n"+
			"incident, the finding with the recorded, old and new answers side by side, the variants\n"+
			"(filterable by outcome), the invariants, and the builds, fixture and options. Given a\n"+
			"directory, it reads it as a harness job, as 'kavach recount' does, and writes the\n"+
			"counts, each report against its own evidence, and the two graders by task.\n"+
			"The page fetches nothing when opened and prints as it shows. It is written whole or\n"+
			"not at all. 'kavach diff --html' and 'kavach recount --html' write the same pages.\n"+
			"Exit 0 when the page is written, 2 when it cannot be.",
			"kavach report report.json --html report.html"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "html", Required: true, Usage: "write the page to `FILE`"},
			&cli.StringFlag{Name: "summary", Usage: "for a job directory: compare the counts with `FILE`, as kavach recount --summary does"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			path, err := oneArg(c, "REPORT")
			if err != nil {
				return err
			}
			out := c.String("html")
			if err := checkHTMLOut(out, pathcheck.Input{What: "the report it is made from", Path: path}); err != nil {
				return err
			}
			render, err := htmlreport.Open(path, c.String("summary"))
			if err != nil {
				return err
			}
			if err := htmlreport.WriteFile(out, render); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "page: %s\n", out)
			return nil
		},
	}
}

// htmlFlag is --html on the commands that write a page beside their output.
func htmlFlag() cli.Flag {
	return &cli.StringFlag{Name: "html", Usage: "also write the report as one HTML page to `FILE` (as kavach report --html does)"}
}

// checkHTMLOut says, before any work, what is wrong with where a page is
// to be written: it must not be one of the command's inputs, nor an
// existing file that is not a Kavach page (see pathcheck.Output).
func checkHTMLOut(out string, inputs ...pathcheck.Input) error {
	if out == "" {
		return usagef("give the page's file name, such as --html report.html", "--html: empty file name")
	}
	return pathcheck.Output("--html", out, pathcheck.Page, inputs...)
}

// writeHTML writes the page of a report, one fixture's or a suite's, when
// --html asked for one, and says where on stderr.
func writeHTML(c *cli.Context, render func(io.Writer) error) error {
	out := c.String("html")
	if out == "" {
		return nil
	}
	if err := htmlreport.WriteFile(out, render); err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "kavach: page: %s\n", out)
	return nil
}
