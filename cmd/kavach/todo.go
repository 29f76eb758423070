package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// notYet is the action of a verb that a later issue builds: it exits 2
// and says so, rather than pretending.
func notYet(what string) cli.ActionFunc {
	return func(c *cli.Context) error {
		return fmt.Errorf("kavach %s is not built yet (%s); nothing was done", c.Command.Name, what)
	}
}

func variantsCommand() *cli.Command {
	return &cli.Command{
		Name:      "variants",
		Usage:     "list the variants a diff would generate (not built yet)",
		ArgsUsage: "FIXTURE",
		Description: withExample("Lists, without running anything, the mutated variants of the incident that\n"+
			"'kavach diff' would replay, each with its id and a one-line description. Not built yet:\n"+
			"this exits 2 until the variants issue lands.",
			"kavach variants incident.kavach --variants 64 --seed 1"),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "variants", Value: 64, Usage: "generate at most `N` variants"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed `S` of the generator"},
		},
		OnUsageError: onUsageError,
		Action:       notYet("the variant generator comes with the variants issue"),
	}
}

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "grade a new build against an incident (not built yet)",
		ArgsUsage: "OLD NEW FIXTURE",
		Description: withExample("Replays the fixture on the old build (which must fail the recorded way) and on\n"+
			"the new build, and prints one verdict: fixed, diverged@N, still_failing@N,\n"+
			"invariant_violated(NAME)@N, variant_failed(K)@N or unverified(REASON).\n"+
			"Exit status: 0 fixed, 1 red, 2 could not grade, 3 unverified. Not built yet: exits 2.",
			"kavach diff ./redis-old ./redis-new incident.kavach --out report.json"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "invariants", Usage: "invariants `FILE`"},
			&cli.IntFlag{Name: "variants", Value: 64, Usage: "generate at most `N` variants"},
			&cli.IntFlag{Name: "min-variants", Value: 10, Usage: "call it fixed only with at least `M` reproducing variants"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed `S` of the variant generator"},
			&cli.IntFlag{Name: "j", Usage: "run `N` replays at once (default: the number of cores)"},
			&cli.BoolFlag{Name: "json", Usage: "print the full report as JSON"},
			&cli.StringFlag{Name: "out", Usage: "write the full report to `REPORT`"},
		},
		OnUsageError: onUsageError,
		Action:       notYet("the diff comes with the diff issue"),
	}
}

func verdictCommand() *cli.Command {
	return &cli.Command{
		Name:      "verdict",
		Usage:     "recompute a report's verdict from its evidence (not built yet)",
		ArgsUsage: "REPORT",
		Description: withExample("Recomputes the verdict from the evidence in a report written by 'kavach diff'\n"+
			"and says whether it agrees with the verdict written in it (exit 1 if not).\n"+
			"Not built yet: exits 2.",
			"kavach verdict report.json"),
		OnUsageError: onUsageError,
		Action:       notYet("reports come with the diff issue"),
	}
}
