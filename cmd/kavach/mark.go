package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/invariants"
	"github.com/kavach-dev/kavach/record"
)

func markCommand() *cli.Command {
	return &cli.Command{
		Name:      "mark",
		Usage:     "declare the incident's failure: which step, and how to tell it failed",
		ArgsUsage: "FIXTURE",
		Description: withExample("Sets the failure of a fixture: step N fails by the oracle crash, hang, error,\n"+
			"error:CLASS (e.g. error:WRONGTYPE) or invariant:NAME. Replaces any failure recorded.\n"+
			"The fixture is rewritten to a new file and renamed into place: a failed mark loses nothing.",
			"kavach mark incident.kavach --step 12 --oracle error:WRONGTYPE"),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "step", Required: true, Usage: "the failing step `N` (see 'kavach show')"},
			&cli.StringFlag{Name: "oracle", Required: true, Usage: "how to tell the step failed: crash, hang, error, error:CLASS, invariant:NAME"},
			&cli.StringFlag{Name: "invariants", Usage: "embed the invariants `FILE` in the fixture (docs/invariants.md)"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			path, err := oneArg(c, "FIXTURE")
			if err != nil {
				return err
			}
			oracle, err := kavach.ParseOracle(c.String("oracle"))
			if err != nil {
				return usagef("", "%v", err)
			}
			fx, err := fixtures.Load(path)
			if err != nil {
				return err
			}
			f, err := record.FailureAt(fx, codecFor(fx.Header.Protocol), c.Int("step"), oracle)
			if err != nil {
				return usagef("run 'kavach show "+path+"' to see the steps", "%v", err)
			}
			a := fixtures.Amendment{Failure: &f}
			if file := c.String("invariants"); file != "" {
				src, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("read invariants: %w", err)
				}
				if _, err := invariants.Parse(file, string(src)); err != nil {
					return err
				}
				a.Invariants = &fixtures.Invariants{Name: filepath.Base(file), Source: string(src)}
			}
			if name := oracle.Invariant; name != "" {
				set, err := loadInvariants(c.String("invariants"), fx)
				if err != nil {
					return err
				}
				if set == nil || !set.Has(name) {
					return usagef("declare it in an invariants file and pass --invariants FILE", "invariant %q: no invariants file declares it", name)
				}
			}
			if err := fixtures.Amend(path, a); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "kavach: %s: failure at step %d, signature %s\n", path, f.Step, f.Signature)
			return nil
		},
	}
}
