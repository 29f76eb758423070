package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/grading"
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
			&cli.IntFlag{Name: "variants", Value: 64, Usage: "generate at most `N` variants"},
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
				return listReportVariants(c, r)
			}
			path, err := oneArg(c, "FIXTURE")
			if err != nil {
				return err
			}
			if n := c.Int("variants"); n < 0 {
				return usagef("", "--variants %d: need 0 or more", n)
			}
			list, err := grading.ListVariants(c.Context, grading.VariantsRequest{Fixture: path, Build: c.String("build"),
				Budget: c.Int("variants"), Seed: c.Uint64("seed"), TrustLaunch: c.Bool("trust-fixture-launch")})
			if err != nil {
				return err
			}
			if c.String("build") == "" {
				fmt.Fprintf(c.App.ErrWriter, "kavach: without --build, field types are guessed: this numbering may differ from kavach diff's.\n"+
					"The variants a diff ran, as it numbers them: kavach variants --report REPORT\n")
			}
			vs := list.Variants
			if c.Bool("json") {
				enc := jsonEncoder(c.App.Writer)
				for _, v := range vs {
					if err := enc.Encode(v); err != nil {
						return err
					}
				}
				return nil
			}
			for _, l := range list.LeftWhole {
				fmt.Fprintf(c.App.ErrWriter, "kavach: left whole: %s\n", l)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "K\tKIND\tDESCRIPTION")
			kinds := make([]grade.VariantEvidence, len(vs))
			for i, v := range vs {
				fmt.Fprintf(tw, "%d\t%s\t%s\n", v.K, v.Kind, v.Description)
				kinds[i] = grade.VariantEvidence{K: v.K, Kind: v.Kind, Regression: v.Regression}
			}
			if err := tw.Flush(); err != nil || len(vs) == 0 {
				return err
			}
			return printKinds(c, grade.CountKinds(kinds), false)
		},
	}
}

// listReportVariants prints the variants a diff ran, from its report: K,
// kind, what became of it, and its description.
func listReportVariants(c *cli.Context, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read report: %w", err)
	}
	var rep grade.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("report %s: not a kavach diff report: %w", path, err)
	}
	if rep.SchemaVersion != grade.SchemaVersion {
		return fmt.Errorf("report %s: schema version %d, this Kavach reads %d", path, rep.SchemaVersion, grade.SchemaVersion)
	}
	list := rep.Evidence.Variants.List
	if c.Bool("json") {
		enc := jsonEncoder(c.App.Writer)
		for _, v := range list {
			if err := enc.Encode(v); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "K\tKIND\tRESULT\tDESCRIPTION")
	for _, v := range list {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", v.K, v.Kind, variantResult(v), v.Description)
	}
	if err := tw.Flush(); err != nil || len(list) == 0 {
		return err
	}
	return printKinds(c, grade.CountKinds(list), true)
}

// variantResult is what became of a variant in a diff.
func variantResult(v grade.VariantEvidence) string {
	switch {
	case !v.Kept && v.Regression:
		return "not-kept(old build failed)"
	case !v.Kept:
		return "not-kept(old build did not fail)"
	case v.Skipped:
		return "skipped"
	case v.FailedStep > 0:
		return fmt.Sprintf("failed@%d", v.FailedStep)
	}
	return "passed"
}

// printKinds prints the variants' count by kind, after their list: how
// many there are of each and, from a report, how many reproduced the
// failure on the old build (a regression kind: were handled by it) and
// how many of those the new build failed.
func printKinds(c *cli.Context, kinds []grade.KindCount, ran bool) error {
	fmt.Fprintln(c.App.Writer)
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	if !ran {
		fmt.Fprintln(tw, "KIND\tVARIANTS")
		for _, k := range kinds {
			fmt.Fprintf(tw, "%s\t%d\n", k.Kind, k.Generated)
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "KIND\tVARIANTS\tREPRODUCED\tHANDLED\tFAILED")
	for _, k := range kinds {
		reproduced, handled := strconv.Itoa(k.Reproduced), "-"
		switch {
		case grading.OnlyHandled(k):
			reproduced, handled = "-", strconv.Itoa(k.Handled)
		case k.Handled > 0:
			handled = strconv.Itoa(k.Handled)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\n", k.Kind, k.Generated, reproduced, handled, k.Failed)
	}
	return tw.Flush()
}
