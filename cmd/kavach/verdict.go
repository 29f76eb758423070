package main

import (
	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/jsonout"
)

func verdictCommand() *cli.Command {
	return &cli.Command{
		Name:      "verdict",
		Usage:     "recompute a report's verdict from its evidence",
		ArgsUsage: "REPORT",
		Description: withExample("Recomputes the verdict from the evidence in a report written by 'kavach diff'\n"+
			"(never from its verdict or findings), each variant's pass or fail from its steps,\n"+
			"and says whether they agree with those written in it. Exit 0 when they agree, 1 when\n"+
			"they do not, 2 when the report is unreadable.",
			"kavach verdict report.json"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: `print {"report", "verdict", "derived", "agrees"} as JSON`},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			path, err := oneArg(c, "REPORT")
			if err != nil {
				return err
			}
			check, err := grading.CheckVerdict(path)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if err := jsonout.Print(c.App.Writer, check); err != nil {
					return err
				}
			} else {
				check.Print(c.App.Writer)
			}
			if !check.Agrees {
				return &verdictError{code: exitRed}
			}
			return nil
		},
	}
}
