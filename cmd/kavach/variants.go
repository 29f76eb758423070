package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/textreport"
)

func variantsCommand() *cli.Command {
	return &cli.Command{
		Name:      "variants",
		Usage:     "list the variants a diff would generate, without running anything",
		ArgsUsage: "FIXTURE | --report REPORT",
		Description: withExample("Lists the mutated variants of the incident that 'kavach diff' would replay, each\n"+
			"with its id K and a one-line description. Nothing is run: field types are guessed\n"+
			"(numbers look like numbers) and no variant on keys of other types or other choices of the\n"+
			"grammar is made; 'kavach diff' learns them from the old build, so its numbering can differ.\n"+
			"--build OLD learns them here too (it starts OLD once), with the diff's --variants and --seed\n"+
			"giving its set. --report REPORT lists the variants a diff ran, as its report numbers them,\n"+
			"with what became of each.",
			"kavach variants incident.kavach --variants 64 --seed 1\n   kavach variants --report report.json"),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "variants", Value: 64, Usage: "generate at most `N` variants (the default 64 grows by one per kind and cause, to 128)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed `S` of the generator"},
			&cli.StringFlag{Name: "build", Usage: "learn request types from the old build at `PATH`"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON Lines, one variant per line"},
			&cli.StringFlag{Name: "report", Usage: "list the variants the diff that wrote `REPORT` ran (no FIXTURE)"},
			trustFlag(),
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if r := c.String("report"); r != "" {
				if c.NArg() != 0 {
					return usagef("run 'kavach variants --help' for usage and an example", "kavach variants --report REPORT takes no FIXTURE; got %d argument(s)", c.NArg())
				}
				ran, err := grading.ReportVariants(r)
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return textreport.RanVariantsJSON(c.App.Writer, ran)
				}
				return textreport.RanVariants(c.App.Writer, ran)
			}
			path, err := oneArg(c, "FIXTURE")
			if err != nil {
				return err
			}
			if n := c.Int("variants"); n < 0 {
				return usagef("", "--variants %d: need 0 or more", n)
			}
			list, err := grading.ListVariants(c.Context, grading.VariantsRequest{Fixture: path, Build: c.String("build"),
				Budget: c.Int("variants"), Seed: c.Uint64("seed"), TrustLaunch: c.Bool("trust-fixture-launch"), Warn: warnTo(c.App.ErrWriter)})
			if err != nil {
				return err
			}
			if c.String("build") == "" {
				fmt.Fprintf(c.App.ErrWriter, "kavach: without --build, field types are guessed: this numbering may differ from kavach diff's.\n"+
					"The variants a diff ran, as it numbers them: kavach variants --report REPORT\n")
			}
			if c.Bool("json") {
				return textreport.VariantsJSON(c.App.Writer, list)
			}
			textreport.LeftWhole(c.App.ErrWriter, list)
			return textreport.Variants(c.App.Writer, list)
		},
	}
}
