package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/replay"
)

func replayCommand() *cli.Command {
	return &cli.Command{
		Name:      "replay",
		Usage:     "replay a fixture against one build and say whether it reproduces the recording",
		ArgsUsage: "BUILD FIXTURE",
		Description: withExample("Starts BUILD (with the arguments the fixture was recorded with) on a free loopback\n"+
			"port under a virtual clock, drives the fixture's requests through it as recorded, and\n"+
			"prints per step whether the build gave the recorded output. The build is replayed\n"+
			"--runs times (default 2), the last run (of two or more) with its timing perturbed as\n"+
			"on a loaded machine, as kavach diff does: fields that differ between the runs are\n"+
			"noise, listed and not counted. Exit 0 when every step reproduced the recording (the recorded failure\n"+
			"counts when it recurs: an invariant failure when the invariant is violated there),\n"+
			"1 when a step differed (or crashed or hung where the recording did not), 2 when it\n"+
			"could not replay.\n"+
			"For a fixture whose secrets were redacted, set KAVACH_REDIS_SECRET to the password.",
			"kavach replay ./redis-server-old incident.kavach --json"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the traces and the verdict per step as JSON"},
			&cli.StringFlag{Name: "invariants", Usage: "invariants `FILE` that judges an invariant failure (default: embedded in the fixture, or beside it)"},
			&cli.DurationFlag{Name: "step-timeout", Value: 5 * time.Second, Usage: "a step with no reply within `D` hangs"},
			&cli.IntFlag{Name: "runs", Value: 2, Usage: "replay `N` times (the last of two or more perturbed); fields that differ between runs are noise"},
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
			fx, in, err := loadFixture(a[1])
			if err != nil {
				return err
			}
			if c.Int("runs") < 1 {
				return usagef("", "--runs %d: need at least 1", c.Int("runs"))
			}
			if err := checkTimeouts(map[string]time.Duration{"--step-timeout": c.Duration("step-timeout"), "--start-timeout": c.Duration("start-timeout")}); err != nil {
				return err
			}
			if err := in.checkLaunch(fx, c.Bool("trust-fixture-launch"), a[0]); err != nil {
				return err
			}
			opts := replayOptions(fx, in, c.Duration("step-timeout"), c.Duration("start-timeout"))
			opts.RealTime = c.Bool("real-time")
			launch := buildLaunch(fx, a[0])
			var traces []*replay.Trace
			for i := 0; i < c.Int("runs"); i++ {
				// The last run of two or more perturbed, as kavach diff
				// replays the old build: an answer that depends on the
				// machine's load shows as noise.
				o := opts
				o.Perturb = c.Int("runs") >= 2 && i == c.Int("runs")-1
				tr, err := replay.Run(c.Context, launch, fx.Events, o)
				if err != nil {
					return err
				}
				if c.Context.Err() != nil {
					// Stopped by a signal: an interrupted run is no evidence,
					// and no run follows it.
					return fmt.Errorf("interrupted during run %d of %d: %w", i+1, c.Int("runs"), context.Cause(c.Context))
				}
				traces = append(traces, tr)
			}
			recorded := replay.Recorded(fx.Events, in.codec, in.classifier(), opts.Normalizer)
			// Noise: what differs between this build's own replays.
			noise := replay.FindNoise(traces[0].Steps, 0, traces[1:]...)
			var violated func(int) bool
			if f := fx.Failure; f != nil && f.Oracle.Invariant != "" {
				set, err := loadInvariants(c.String("invariants"), fx)
				if err != nil {
					return err
				}
				if set == nil || !set.Has(f.Oracle.Invariant) {
					return usagef("", "fixture %s: its failure is invariant %q, which no invariants file declares: pass --invariants FILE", fx.Path, f.Oracle.Invariant)
				}
				v := grade.Violated(set, in.codec, traces[0])
				violated = func(n int) bool {
					return slices.Contains(v[n], f.Oracle.Invariant)
				}
			}
			v := replay.VerifyInvariant(recorded, fx.Failure, traces[0], noise, violated)
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"verification": v, "noise": noise.List(), "traces": traces}); err != nil {
					return err
				}
			} else {
				printReplay(c.App.Writer, fx, in, traces[0], v, noise)
			}
			if !v.Reproduced {
				return &verdictError{code: exitRed}
			}
			return nil
		},
	}
}

// loadFixture loads a fixture and finds its integration.
func loadFixture(path string) (*fixtures.Fixture, integration, error) {
	fx, err := fixtures.Load(path)
	if err != nil {
		return nil, integration{}, err
	}
	if fx.Warning != nil {
		fmt.Fprintf(os.Stderr, "kavach: warning: %v\n", fx.Warning)
	}
	in, ok := integrations()[fx.Header.Protocol]
	if !ok {
		return nil, in, fmt.Errorf("fixture %s: protocol %q: Kavach speaks %s", path, fx.Header.Protocol, strings.Join(protocols(), ", "))
	}
	if len(fx.Header.Volatile) > 0 && in.volatile != nil {
		in.codec = in.volatile(fx.Header.Volatile)
	}
	return fx, in, nil
}

// buildLaunch starts BUILD the way the fixture's old build was started,
// with the secret of KAVACH_REDIS_SECRET put back where recording
// redacted one from the arguments (--requirepass).
func buildLaunch(fx *fixtures.Fixture, build string) kavach.Launch {
	l := kavach.Launch{Path: build}
	if fx.Header.Launch != nil {
		l.Args = fx.Header.Launch.Args
		in := integrations()[fx.Header.Protocol]
		if secret := os.Getenv("KAVACH_REDIS_SECRET"); secret != "" && in.unredactArgs != nil {
			l.Args = in.unredactArgs(l.Args, secret)
		}
	}
	return l
}

func replayOptions(fx *fixtures.Fixture, in integration, timeout, startTimeout time.Duration) replay.Options {
	opts := replay.Options{
		Codec: in.codec, Classifier: in.classifier(), Normalizer: in.normalizer(), Launcher: in.launcher(startTimeout),
		StepTimeout: timeout, Start: fx.Header.Start,
	}
	secret := os.Getenv("KAVACH_REDIS_SECRET")
	if secret != "" && in.unredact != nil {
		opts.Prepare = func(b []byte) []byte { return in.unredact(b, secret) }
	}
	// A fixture with redactions compares replies as they were written:
	// with the secrets in them redacted the same way.
	if rr, ok := in.codec.(kavach.ReplyRedactor); ok && len(fx.Redactions) > 0 && opts.Normalizer != nil {
		opts.Normalizer = redactingNormalizer{n: opts.Normalizer, rr: rr, in: in, secret: secret}
	}
	return opts
}

// redactingNormalizer redacts a reply (see kavach.ReplyRedactor) before
// normalizing it, so that a replayed reply holding a secret compares equal
// to the recorded one, where recording redacted it. The request is taken
// with the secret put back, so that an echo of it is found.
type redactingNormalizer struct {
	n      kavach.Normalizer
	rr     kavach.ReplyRedactor
	in     integration
	secret string
}

func (r redactingNormalizer) Normalize(request, response []byte) any {
	req := request
	if r.secret != "" && r.in.unredact != nil {
		req = r.in.unredact(request, r.secret)
	}
	var full []byte
	if r.rr.ReplyMayHoldSecret(req) {
		full = req
	}
	if out, note := r.rr.RedactReply(full, response); note != "" {
		response = out
	}
	// The reply to bytes the codec cannot frame, by pattern, as recording did.
	if rw, ok := r.rr.(kavach.RawRedactor); ok {
		if n, err := r.in.codec.SplitRequest(request); err != nil || n != len(request) {
			if out, note := rw.RedactRaw(response, false); note != "" {
				response = out
			}
		}
	}
	return r.n.Normalize(request, response)
}

func printReplay(w io.Writer, fx *fixtures.Fixture, in integration, tr *replay.Trace, v replay.Verification, noise replay.Noise) {
	dur := "?"
	if fx.End != nil {
		dur = fx.End.Duration.Round(time.Millisecond).String()
	}
	fmt.Fprintf(w, "replay    %s\nfixture   %s (%d steps, recorded over %s)\nclock     %s\nwall      %s\n",
		tr.Build.Path, fx.Path, len(v.Steps), dur, tr.Clock, tr.Wall.Round(time.Millisecond))
	if tr.Stopped != "" {
		fmt.Fprintf(w, "stopped   %s\n", tr.Stopped)
	}
	if nl := noise.List(); len(nl) > 0 {
		var parts []string
		for _, f := range nl {
			parts = append(parts, fmt.Sprintf("step %d %s", f.Step, f.Path))
		}
		fmt.Fprintf(w, "noise     %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	steps := kavach.Steps(fx.Events, in.codec)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tRECORDED\tREPLAYED\tREQUEST")
	counts := map[string]int{}
	for _, c := range v.Steps {
		counts[c.Status]++
		rec, got := c.Recorded.String(), c.Outcome.String()
		if c.Status == replay.StatusNotRun {
			got = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.Step, c.Status, rec, got, in.codec.DescribeRequest(steps[c.Step-1].Request.Data, 48))
		for _, d := range c.Diffs {
			fmt.Fprintf(tw, "\t  %s: want %s, got %s\n", d.Path, cutString(d.Want, 80), cutString(d.Got, 80))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	var parts []string
	for _, s := range []string{replay.StatusEqual, replay.StatusNoise, replay.StatusReproduced, replay.StatusDifferent, replay.StatusNotFailed, replay.StatusNotRun, replay.StatusAfterFailed} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	result := "reproduced"
	if !v.Reproduced {
		result = fmt.Sprintf("not reproduced, from step %d", v.FirstDifferent)
	}
	fmt.Fprintf(w, "result    %s (%s)\n", result, strings.Join(parts, ", "))
}

func cutString(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
