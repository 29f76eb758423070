package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grading"
)

func replayCommand() *cli.Command {
	return &cli.Command{
		Name:      "replay",
		Usage:     "replay a fixture against one build and say whether it reproduces the recording",
		ArgsUsage: "BUILD FIXTURE",
		Description: withExample("Starts BUILD (with the arguments the fixture was recorded with) on a free loopback\n"+
			"port under a virtual clock, drives the fixture's requests through it as recorded, and\n"+
			"prints per step whether the build gave the recorded output. The build is replayed\n"+
			"--runs times (default 3), the last run (of two or more) with its timing perturbed as\n"+
			"on a loaded machine, as kavach diff replays its old build: fields where a run differs\n"+
			"from the recording are noise, listed and not counted, as kavach diff finds them.\n"+
			"Each step is judged by the rule kavach diff holds its old build to: exit 0 when\n"+
			"every step before the failure (every step, for a contract) ran with the recorded\n"+
			"outcome and output, noise aside, and the recorded failure recurred (an invariant\n"+
			"failure when the invariant is violated there), 1 when not, 2 when it could not replay.\n"+
			"For a fixture whose secrets were redacted, set KAVACH_REDIS_SECRET to the password.",
			"kavach replay ./redis-server-old incident.kavach --json"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the traces and the verdict per step as JSON"},
			&cli.StringFlag{Name: "invariants", Usage: "invariants `FILE` that judges an invariant failure (default: embedded in the fixture, or beside it)"},
			&cli.DurationFlag{Name: "step-timeout", Value: 5 * time.Second, Usage: "a step with no reply within `D` hangs"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "replay `N` times (the last of two or more perturbed), as kavach diff its old build; fields where a run differs from the recording are noise"},
			&cli.BoolFlag{Name: "real-time", Usage: "do not fake the clock (gaps are compressed)"},
			&cli.DurationFlag{Name: "start-timeout", Value: 10 * time.Second, Usage: "a build not ready within `D` is an error"},
			trustFlag(),
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			a, err := args(c, "BUILD", "FIXTURE")
			if err != nil {
				return err
			}
			res, err := grading.Replay(c.Context, grading.ReplayRequest{Build: a[0], Fixture: a[1],
				Invariants: c.String("invariants"), Runs: c.Int("runs"),
				StepTimeout: c.Duration("step-timeout"), StartTimeout: c.Duration("start-timeout"),
				RealTime: c.Bool("real-time"), TrustLaunch: c.Bool("trust-fixture-launch"), JSON: c.Bool("json"), Warn: warnTo(c.App.ErrWriter)})
			if err != nil {
				return err
			}
			defer res.Close()
			if c.Bool("json") {
				err = res.PrintJSON(c.App.Writer)
			} else {
				err = res.Print(c.App.Writer)
			}
			if err != nil {
				return err
			}
			if !res.Reproduced() {
				return &verdictError{code: exitRed}
			}
			return nil
		},
	}
}
