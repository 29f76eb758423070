package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/record"
	"github.com/kavach-dev/kavach/textreport"
)

func recordCommand() *cli.Command {
	return &cli.Command{
		Name:      "record",
		Usage:     "record an incident through a proxy in front of the old build",
		ArgsUsage: "(--upstream ADDR | -- BUILD [ARG...])",
		Description: withExample("Listens on a loopback address, forwards every connection to the service unchanged\n"+
			"and writes all traffic, with its timing, to the fixture as it happens. Either in front of\n"+
			"a running service (--upstream), or starting the old build itself (-- BUILD ARGS), which\n"+
			"records its identity and how it was started, and ends the recording when it exits.\n"+
			"SIGINT or SIGTERM end the recording cleanly. When the service closes a connection with\n"+
			"a request unanswered, or the build dies, that step is recorded as the failure (a crash).\n"+
			"Secrets (AUTH passwords and the like) are redacted unless --keep-secrets.",
			"kavach record --protocol resp --out incident.kavach --ready-file addr -- ./redis-server-old"),
		Flags:        recordFlags(),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.IsSet("cut") {
				path, err := record.AskCut(c.String("cut"), c.Duration("cut-timeout"))
				if err == nil {
					fmt.Fprintln(c.App.Writer, path)
				}
				return err
			}
			if !c.IsSet("protocol") || !c.IsSet("out") {
				return usagef("run 'kavach record --help' for an example", "Required flags \"protocol, out\" not set")
			}
			if !grading.Speaks(c.String("protocol")) {
				return usagef("", "protocol %q: Kavach records %s", c.String("protocol"), strings.Join(grading.Protocols(), ", "))
			}
			if err := grading.CheckTimeouts(map[string]time.Duration{"--start-timeout": c.Duration("start-timeout")}); err != nil {
				return err
			}
			redact := append(c.StringSlice("redact"), c.StringSlice("redact-param")...)
			if err := grading.CheckRedact(c.String("protocol"), redact); err != nil {
				return err
			}
			s := record.Session{
				Out:       c.String("out"),
				Upstream:  c.String("upstream"),
				ReadyFile: c.String("ready-file"),
				Volatile:  c.StringSlice("volatile"),
				Proxy:     record.Options{Listen: c.String("listen")},
			}
			if s.Upstream != "" {
				if err := grading.CheckAddr(s.Upstream); err != nil {
					return usagef("", "--upstream %q: %v: give the running service's HOST:PORT, such as 127.0.0.1:6379", s.Upstream, err)
				}
			}
			if err := stateFlags(c, &s); err != nil {
				return err
			}
			if err := keepFlags(c, &s); err != nil {
				return err
			}
			switch {
			case s.Upstream != "" && c.NArg() > 0:
				return usagef("", "give either --upstream ADDR or -- BUILD ARGS, not both")
			case s.Upstream == "" && c.NArg() == 0:
				return usagef("run 'kavach record --help' for an example", "nothing to record: give --upstream ADDR or -- BUILD ARGS")
			case c.NArg() > 0:
				s.Launch = &kavach.Launch{Path: c.Args().First(), Args: c.Args().Tail()}
			}
			grading.SetupRecording(&s, c.String("protocol"), redact, c.Bool("keep-secrets"), c.Duration("start-timeout"))
			if err := grading.SetFailOn(&s, c.String("protocol"), c.String("fail-on")); err != nil {
				return err
			}
			level := slog.LevelWarn
			if c.Bool("verbose") {
				level = slog.LevelDebug
			}
			s.Proxy.Logger = slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
			stderr := c.App.ErrWriter
			cutsStarted, cutsStop := s.CutOnSignal()
			res, err := s.Run(c.Context, c.String("protocol"), func(addr string) {
				to := s.Upstream
				if s.Launch != nil {
					to = s.Launch.Path
				}
				cutsStarted()
				fmt.Fprintf(stderr, "kavach: recording %s to %s; clients connect to %s (Ctrl-C ends it)\n", to, s.Out, addr)
			})
			cutsStop()
			got := grading.Recorded{Fixture: s.Out, Result: res}
			if s.Keep != nil {
				textreport.Cuts(stderr, got)
				if c.Bool("json") {
					return errors.Join(err, textreport.CutsJSON(c.App.Writer, got))
				}
				return err
			}
			textreport.Recorded(stderr, got)
			if err == nil && c.Bool("json") {
				return textreport.RecordedJSON(c.App.Writer, got)
			}
			return err
		},
	}
}

// stateFlags sets how the session takes the state of a running service
// (docs/record.md, "State") from --state, --state-whole and --state-build,
// and a launched build's state directory from --state-dir
// (grading.SetStateDir).
func stateFlags(c *cli.Context, s *record.Session) error {
	s.State, s.StateWhole, s.StateBuild, s.NoWatch = c.String("state"), c.Bool("state-whole"), c.String("state-build"), c.Bool("no-watch")
	switch s.State {
	case "", fixtures.StateSnapshot, fixtures.StateFirstTouch, fixtures.StateNone:
	default:
		return usagef("", "--state %q: want snapshot, first-touch or none", s.State)
	}
	if (s.State != "" || s.StateWhole || s.StateBuild != "" || s.NoWatch) && s.Upstream == "" {
		return usagef("", "--state, --state-whole, --state-build and --no-watch take the state of a running service: give --upstream ADDR (a build Kavach starts starts empty)")
	}
	return grading.SetStateDir(s, c.String("protocol"), c.String("state-dir"), c.Args().Slice())
}

// recordFlags are kavach record's flags.
func recordFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "protocol", Usage: "the service's protocol: `resp` or http (required)"},
		&cli.StringFlag{Name: "out", Usage: "write the fixture to `FIXTURE` (must not exist; required); with --keep, the directory `DIR` that receives the cuts"},
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:0", Usage: "accept clients on `ADDR` (port 0: any free port)"},
		&cli.StringFlag{Name: "upstream", Usage: "record in front of the running service at `ADDR`"},
		&cli.StringFlag{Name: "fail-on", Usage: "make the first reply this oracle fires on the failure: error or error:`CLASS`"},
		&cli.BoolFlag{Name: "keep-secrets", Usage: "do not redact passwords"},
		&cli.StringFlag{Name: "ready-file", Usage: "write the listening address to `FILE` once ready"},
		&cli.BoolFlag{Name: "verbose", Usage: "log every connection"},
		&cli.StringSliceFlag{Name: "redact", Usage: "also redact the HTTP header, query parameter or JSON member `NAME` (repeatable; docs/security.md lists those always redacted)"},
		&cli.StringSliceFlag{Name: "redact-param", Usage: "the same as --redact (kept for scripts)"},
		&cli.StringSliceFlag{Name: "volatile", Usage: "a response header `NAME` that changes on every response: not compared on replay (repeatable)"},
		&cli.DurationFlag{Name: "start-timeout", Value: 10 * time.Second, Usage: "a build not ready within `D` is an error"},
		&cli.StringFlag{Name: "state", Usage: "with --upstream, how to take the state the service holds: `snapshot` (the default; first-touch where the service refuses it), first-touch or none"},
		&cli.BoolFlag{Name: "state-whole", Usage: "keep the whole snapshot, not only the keys the recording names"},
		&cli.BoolFlag{Name: "no-watch", Usage: "with --upstream, do not watch the service for writes of other clients (MONITOR) to replay where they ran"},
		&cli.StringFlag{Name: "state-build", Usage: "cut the snapshot with the build at `PATH` (default: the service's own executable)"},
		&cli.StringFlag{Name: "state-dir", Usage: "with -- BUILD ARGS (http), the directory `DIR` of the files the build loads at start-up and writes back: the build gets a copy, named {state} in its arguments, and the fixture keeps DIR's files for its replays"},
		&cli.BoolFlag{Name: "json", Usage: "print what was recorded as JSON on stdout when the recording ends"},
		&cli.DurationFlag{Name: "keep", Usage: "always on: keep only the last `D` of traffic in rolling segments, and cut it into a fixture in the --out directory at each failure detected, SIGUSR1 or --cut"},
		&cli.Int64Flag{Name: "keep-bytes", Usage: "always on: the kept segments take at most `N` bytes of disk (with or without --keep)"},
		&cli.DurationFlag{Name: "keep-after", Value: time.Second, Usage: "always on: go on recording `D` past a failure before cutting it"},
		&cli.StringFlag{Name: "cut", Usage: "ask the always-on recording whose --out directory is `DIR` (or whose pid file is DIR/.kavach-record.pid) for a cut now; prints the cut's path"},
		&cli.DurationFlag{Name: "cut-timeout", Value: 30 * time.Second, Usage: "with --cut, wait at most `D` for the cut to appear"},
	}
}
