package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/textreport"
)

func markCommand() *cli.Command {
	return &cli.Command{
		Name:      "mark",
		Usage:     "declare the incident's failure: which step, and how to tell it failed",
		ArgsUsage: "FIXTURE",
		Description: withExample("Sets the failure of a fixture: step N fails by the oracle crash, hang, error,\n"+
			"error:CLASS (e.g. error:WRONGTYPE) or invariant:NAME. Replaces any failure recorded.\n"+
			"With error, the signature is the error's class and message, its variable parts masked\n"+
			"(error:ERR value is not an integer or out of range): variants reproduce only that error.\n"+
			"error:CLASS is loose: any error of the class counts, other errors the variants meet included.\n"+
			"The oracle must fire on the recorded step (a crash marked on a step answered ok is refused);\n"+
			"--force marks it anyway. --exclude names variant kinds that do not speak for the incident.\n"+
			"Sets the grade's floor with --floor-min-variants, --floor-variants and --floor-seed (each\n"+
			"replaces the floor as a whole): 'kavach diff' and the MCP tool refuse weaker options\n"+
			"unless told --below-floor, and then never say fixed. A floor, or invariants (--invariants,\n"+
			"a contract's, docs/contracts.md), can be set alone, without --step and --oracle. The fixture is rewritten to a new file and renamed into place: a\n"+
			"failed mark loses nothing.",
			"kavach mark incident.kavach --step 12 --oracle error --exclude clock-back --floor-min-variants 10 --floor-variants 64 --floor-seed 1"),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "step", Usage: "the failing step `N` (see 'kavach show'; required with --oracle)"},
			&cli.StringFlag{Name: "oracle", Usage: "how to tell the step failed: crash, hang, error, error:CLASS (loose), invariant:NAME"},
			&cli.StringSliceFlag{Name: "exclude", Usage: "variant `KIND`s that do not speak for the incident (" + strings.Join(kavach.VariantKinds, ", ") + ")"},
			&cli.BoolFlag{Name: "force", Usage: "mark the failure even where the recording does not show it"},
			&cli.IntFlag{Name: "floor-min-variants", Usage: "floor: grade with at least `M` reproducing variants needed"},
			&cli.IntFlag{Name: "floor-variants", Usage: "floor: grade with at least `N` variants generated"},
			&cli.Uint64Flag{Name: "floor-seed", Usage: "floor: grade with the seed `S` only"},
			&cli.StringFlag{Name: "invariants", Usage: "embed the invariants `FILE` in the fixture (docs/invariants.md)"},
			&cli.BoolFlag{Name: "json", Usage: "print what was marked as JSON on stdout"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			path, err := oneArg(c, "FIXTURE")
			if err != nil {
				return err
			}
			floor, err := markFloor(c)
			if err != nil {
				return err
			}
			failure := c.IsSet("step") || c.IsSet("oracle")
			switch {
			case !failure && floor == nil && !c.IsSet("invariants"):
				return usagef("run 'kavach mark --help' for usage and an example",
					"Required flags \"step, oracle\" not set (or set a floor with --floor-min-variants, --floor-variants, --floor-seed, or embed invariants with --invariants)")
			case failure && !(c.IsSet("step") && c.IsSet("oracle")):
				return usagef("run 'kavach mark --help' for usage and an example", "Required flags \"step, oracle\": give both")
			}
			a, err := grading.Mark(grading.MarkRequest{Fixture: path, Failure: failure,
				Step: c.Int("step"), Oracle: c.String("oracle"), Exclude: c.StringSlice("exclude"), Force: c.Bool("force"),
				Floor: floor, Invariants: c.String("invariants")})
			if err != nil {
				return err
			}
			m := grading.Marked{Fixture: path, Oracle: c.String("oracle"), Amendment: a}
			if c.Bool("json") {
				return textreport.MarkedJSON(c.App.Writer, m)
			}
			textreport.Marked(c.App.ErrWriter, m)
			return nil
		},
	}
}

// markFloor is the floor the --floor-* flags set, or nil when none is given.
func markFloor(c *cli.Context) (*fixtures.Floor, error) {
	if !c.IsSet("floor-min-variants") && !c.IsSet("floor-variants") && !c.IsSet("floor-seed") {
		return nil, nil
	}
	f := &fixtures.Floor{MinVariants: c.Int("floor-min-variants"), Variants: c.Int("floor-variants")}
	if f.MinVariants < 0 || f.Variants < 0 {
		return nil, usagef("", "--floor-min-variants and --floor-variants take a number of variants, 0 or more")
	}
	if c.IsSet("floor-seed") {
		seed := c.Uint64("floor-seed")
		f.Seed = &seed
	}
	return f, nil
}
