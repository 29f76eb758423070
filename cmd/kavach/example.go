package main

import (
	"github.com/kavach-dev/kavach/internal/jsonout"
	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/example"
	"github.com/kavach-dev/kavach/grading"
)

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
			&cli.IntFlag{Name: "j", Usage: "run `N` replays at once for each diff", DefaultText: jobsDefault},
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
			res, err := example.Grade(c.Context, dir, example.Options{
				Record: c.Bool("record"),
				Diff: grading.Request{Variants: c.Int("variants"), MinVariants: c.Int("min-variants"), Seed: c.Uint64("seed"),
					Jobs: c.Int("j"), Warn: warnTo(c.App.ErrWriter)},
				Log: c.App.ErrWriter,
			})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return jsonout.Print(c.App.Writer, res)
			}
			res.PrintTable(c.App.Writer)
			return nil
		},
	}
}
