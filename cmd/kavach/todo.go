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
