package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/textreport"
)

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "render a fixture for a person",
		ArgsUsage: "FIXTURE",
		Description: withExample(
			"Prints the fixture's header and a table of its steps: step, connection, time offset,\n"+
				"request, response and outcome. --step N prints one step in full; --json prints one\n"+
				"JSON object per step (JSON Lines; fields in docs/cli.md).",
			"kavach show incident.kavach --step 12"),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "step", Usage: "print step `N` in full"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON Lines, one object per step"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			path, err := oneArg(c, "FIXTURE")
			if err != nil {
				return err
			}
			v, err := textreport.View(path)
			if err != nil {
				return fmt.Errorf("%w\nkavach show reads files written by 'kavach record'", err)
			}
			if w := v.Warning(); w != nil {
				fmt.Fprintf(c.App.ErrWriter, "kavach: warning: %v\n", w)
			}
			switch {
			case c.IsSet("step"):
				n := c.Int("step")
				if n < 1 || n > v.Steps() {
					return usagef("run 'kavach show "+path+"' to see the steps", "step %d: the fixture has steps 1 to %d", n, v.Steps())
				}
				if c.Bool("json") {
					return v.WriteJSON(c.App.Writer, n)
				}
				return v.WriteStep(c.App.Writer, n)
			case c.Bool("json"):
				return v.WriteJSON(c.App.Writer, 0)
			}
			return v.WriteTable(c.App.Writer)
		},
	}
}
