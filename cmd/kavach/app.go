package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/internal/cut"
	"github.com/kavach-dev/kavach/internal/suggest"
)

// newApp builds the command line. It keeps no package state, so tests run
// it in-process, and its ExitErrHandler never exits: run maps errors.
func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:    "kavach",
		Usage:   "record an incident, then grade fixes against it",
		Version: buildVersion(debug.ReadBuildInfo()),
		Description: "Kavach records an incident's traffic on the old build of a service into a fixture,\n" +
			"then replays it on the old and a new build and says whether the new build fixes it.\n\n" +
			"Exit status: 0 fixed or held (or done), 1 a red verdict, 2 Kavach could not do it, 3 unverified;\n" +
			"130 or 143 when SIGINT or SIGTERM stopped it before it finished.",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		// urfave/cli's own help command answers "No help topic" for a verb
		// it does not know, and exit 0: kavach has its own (helpCommand).
		HideHelpCommand: true,
		// urfave/cli adds its --help/-h flag only to an app without a help
		// command of its own; kavach has one (helpCommand), so the flag is
		// given here. Without it, the flag package answers --help and -h
		// with "flag: help requested" and exit 2.
		Flags:          []cli.Flag{helpFlag()},
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		// Run with no verb, kavach shows its help; with one it does not
		// know, it says so (the verbs are commands: a known one never
		// reaches here).
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowAppHelp(c)
			}
			return unknownCommand(c.App, c.Args().First())
		},
		Commands: []*cli.Command{
			recordCommand(),
			markCommand(),
			showCommand(),
			replayCommand(),
			variantsCommand(),
			diffCommand(),
			verdictCommand(),
			reportCommand(),
			recountCommand(),
			gradeCommand(),
			mcpCommand(),
			helpCommand(),
			versionCommand(),
		},
	}
}

// helpFlag is kavach's --help, -h: the flag urfave/cli looks for to show
// the help (its names are cli.HelpFlag's), one per app so that no app
// shares a flag's parsed state with another. Given first, it is the help
// verb (helpAsVerb).
func helpFlag() cli.Flag {
	return &cli.BoolFlag{
		Name:               "help",
		Aliases:            []string{"h"},
		Usage:              "show the verbs, or with a verb its help (as kavach help does)",
		DisableDefaultText: true,
	}
}

// helpCommand is `kavach help [VERB]`: the verbs, or one verb's help, as
// --help shows them.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:         "help",
		Usage:        "show the verbs, or one verb's help (as VERB --help does)",
		ArgsUsage:    "[VERB]",
		Description:  withExample("Shows kavach's verbs, or with a verb, its flags and an example.", "kavach help diff"),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			switch c.NArg() {
			case 0:
				return cli.ShowAppHelp(c)
			case 1:
				verb := c.Args().First()
				if c.App.Command(verb) == nil {
					return unknownCommand(c.App, verb)
				}
				// From a context whose command has no subcommands, the
				// verb is looked up among the app's commands.
				ctx := cli.NewContext(c.App, nil, c)
				ctx.Command = &cli.Command{}
				return cli.ShowCommandHelp(ctx, verb)
			}
			return usagef("run 'kavach help' for the verbs", "kavach help takes at most 1 argument, [VERB]; got %d", c.NArg())
		},
	}
}

// versionCommand is `kavach version`: what --version prints.
func versionCommand() *cli.Command {
	return &cli.Command{
		Name:         "version",
		Usage:        "print kavach's version",
		Description:  withExample("Prints the version of this kavach build, as --version does.", "kavach version"),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if _, err := args(c); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "kavach version %s\n", c.App.Version)
			return nil
		},
	}
}

// buildVersion is this build's version: its module's, as the go command
// stamped it (v1.2.0 from go install ...@v1.2.0; a pseudo-version from a
// checkout with its commit), else kavach.Version (a build with no module
// version: "(devel)", or none at all).
func buildVersion(bi *debug.BuildInfo, ok bool) string {
	if ok && bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return strings.TrimPrefix(v, "v")
		}
	}
	return kavach.Version
}

// unknownCommand is the usage error for a verb kavach does not have,
// naming the nearest one.
func unknownCommand(app *cli.App, verb string) error {
	var names []string
	for _, c := range app.Commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	hint := "run 'kavach help' for the verbs: " + strings.Join(names, ", ")
	near, close := suggest.Nearest(verb, names)
	if close {
		return usagef(hint, "unknown command %q: did you mean %q?", cutArg(verb), near)
	}
	return usagef(hint, "unknown command %q (the nearest verb is %q)", cutArg(verb), near)
}

// cutArg cuts an argument quoted back in an error to 64 bytes.
func cutArg(s string) string { return cut.String(s, 64) }

// withExample appends an example to a command's help text.
func withExample(desc, example string) string {
	return desc + "\n\nExample:\n   " + example
}
