package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
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
			"With error, the signature is the error's class and message, its variable parts masked\n"+
			"(error:ERR value is not an integer or out of range): variants reproduce only that error.\n"+
			"error:CLASS is loose: any error of the class counts, other errors the variants meet included.\n"+
			"The oracle must fire on the recorded step (a crash marked on a step answered ok is refused);\n"+
			"--force marks it anyway. --exclude names variant kinds that do not speak for the incident.\n"+
			"The fixture is rewritten to a new file and renamed into place: a failed mark loses nothing.",
			"kavach mark incident.kavach --step 12 --oracle error --exclude clock-back"),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "step", Required: true, Usage: "the failing step `N` (see 'kavach show')"},
			&cli.StringFlag{Name: "oracle", Required: true, Usage: "how to tell the step failed: crash, hang, error, error:CLASS (loose), invariant:NAME"},
			&cli.StringSliceFlag{Name: "exclude", Usage: "variant `KIND`s that do not speak for the incident (" + strings.Join(kavach.VariantKinds, ", ") + ")"},
			&cli.BoolFlag{Name: "force", Usage: "mark the failure even where the recording does not show it"},
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
			f.ExcludeVariants = c.StringSlice("exclude")
			if err := kavach.CheckVariantKinds(f.ExcludeVariants); err != nil {
				return usagef("", "--exclude: %v", err)
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
			if !c.Bool("force") {
				var set *invariants.Set
				if oracle.Invariant != "" {
					set, _ = loadInvariants(c.String("invariants"), fx)
				}
				in := integrations()[fx.Header.Protocol]
				if err := grade.CheckMark(fx, in.codec, in.classifier(), in.normalizer(), set, f); err != nil {
					return usagef("run 'kavach show "+path+" --step "+strconv.Itoa(f.Step)+"' to see the step, or pass --force to mark it anyway", "%v", err)
				}
			}
			if err := fixtures.Amend(path, a); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "kavach: %s: failure at step %d, signature %s\n", path, f.Step, f.Signature)
			if len(f.ExcludeVariants) > 0 {
				fmt.Fprintf(c.App.ErrWriter, "kavach: %s: variants excluded: %s\n", path, strings.Join(f.ExcludeVariants, ", "))
			}
			return nil
		},
	}
}
