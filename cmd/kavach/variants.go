package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/variants"
)

func variantsCommand() *cli.Command {
	return &cli.Command{
		Name:      "variants",
		Usage:     "list the variants a diff would generate, without running anything",
		ArgsUsage: "FIXTURE",
		Description: withExample("Lists the mutated variants of the incident that 'kavach diff' would replay, each\n"+
			"with its id K and a one-line description. Nothing is run: field types are guessed\n"+
			"(numbers look like numbers); 'kavach diff' learns them from the old build, so its set can\n"+
			"differ. --build OLD learns them here too (it starts OLD once).",
			"kavach variants incident.kavach --variants 64 --seed 1"),
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "variants", Value: 64, Usage: "generate at most `N` variants"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed `S` of the generator"},
			&cli.StringFlag{Name: "build", Usage: "learn request types from the old build at `PATH`"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON Lines, one variant per line"},
			trustFlag(),
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			path, err := oneArg(c, "FIXTURE")
			if err != nil {
				return err
			}
			if n := c.Int("variants"); n < 0 {
				return usagef("", "--variants %d: need 0 or more", n)
			}
			fx, in, err := loadFixture(path)
			if err != nil {
				return err
			}
			if fx.Failure == nil {
				return fmt.Errorf("fixture %s has no failure to vary: mark it with 'kavach mark %s --step N --oracle ...'", path, path)
			}
			variator, ok := in.codec.(kavach.Variator)
			if !ok {
				return fmt.Errorf("the %s integration cannot vary requests", fx.Header.Protocol)
			}
			var schema kavach.Schema
			if b := c.String("build"); b != "" {
				if err := in.checkLaunch(fx, c.Bool("trust-fixture-launch"), b); err != nil {
					return err
				}
				l := in.launcher(10 * time.Second)
				learner, ok := l.(kavach.SchemaLearner)
				if !ok {
					return fmt.Errorf("the %s integration cannot learn request types from a build", fx.Header.Protocol)
				}
				p, err := l.Start(buildLaunch(fx, b))
				if err != nil {
					return err
				}
				var kinds []string
				for _, s := range kavach.Steps(fx.Events, in.codec) {
					if k, _, ok := variator.Fields(s.Request.Data, nil); ok {
						kinds = append(kinds, k)
					}
				}
				schema, err = learner.Learn(p.Addr(), kinds)
				p.Stop()
				if err != nil {
					return err
				}
			}
			vs := variants.Generate(fx.Events, fx.Failure.Step, variants.Options{
				Codec: in.codec, Variator: variator, Schema: schema, Budget: c.Int("variants"), Seed: c.Uint64("seed")})
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				for _, v := range vs {
					if err := enc.Encode(v); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "K\tKIND\tDESCRIPTION")
			for _, v := range vs {
				kind := "incident"
				if v.Regression {
					kind = "regression"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\n", v.K, kind, v.Description)
			}
			return tw.Flush()
		},
	}
}
