package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach"
)

// newApp builds the command line. It keeps no package state, so tests run
// it in-process, and its ExitErrHandler never exits: run maps errors.
func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:    "kavach",
		Usage:   "record an incident, then grade fixes against it",
		Version: kavach.Version,
		Description: "Kavach records an incident's traffic on the old build of a service into a fixture,\n" +
			"then replays it on the old and a new build and says whether the new build fixes it.\n\n" +
			"Exit status: 0 fixed or held (or done), 1 a red verdict, 2 Kavach could not do it, 3 unverified;\n" +
			"130 or 143 when SIGINT or SIGTERM stopped it before it finished.",
		Reader:          stdin,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usagef("run 'kavach "+c.Command.Name+" --help' for usage and an example", "%v", err)
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
		},
	}
}

// withExample appends an example to a command's help text.
func withExample(desc, example string) string {
	return desc + "\n\nExample:\n   " + example
}
