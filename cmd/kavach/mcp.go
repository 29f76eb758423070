package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/mcpserver"
)

func mcpCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve `kavach diff` to an agent as an MCP tool, over stdio",
		Description: withExample("Runs a Model Context Protocol server on stdin and stdout with one tool, "+mcpserver.ToolName+",\n"+
			"which grades a new build against an incident exactly as 'kavach diff' does: typed input\n"+
			"(old, new, fixture, options, detail: concise|full) and typed output (the verdict, the\n"+
			"headline finding with its diff, a hint, what was checked, the exit status 'kavach diff'\n"+
			"would give, and the path of the full report). Progress is sent while it replays when\n"+
			"the client asks for it. Messages go to stderr. When stdin closes it answers every request\n"+
			"read before, then stops; Ctrl-C or SIGTERM stops it at once, gradings cancelled.\n"+
			"Relative paths in a call are taken from the directory it was started in.\n"+
			"An MCP client starts it with a configuration such as the example (kavach on PATH).",
			`{"mcpServers": {"kavach": {"command": "kavach", "args": ["mcp"]}}}`),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if _, err := args(c); err != nil {
				return err
			}
			return mcpserver.Serve(c.Context, mcpserver.Transport(c.App.Reader, c.App.Writer), mcpConfig(c.App.ErrWriter))
		},
	}
}

// mcpConfig gives the MCP server the defaults of kavach diff's flags,
// and its warnings about fixtures to stderr (the MCP client's log).
func mcpConfig(stderr io.Writer) mcpserver.Config {
	d := diffDefaults()
	d.Warn = warnTo(stderr)
	return mcpserver.Config{Defaults: d}
}

// diffDefaults are the defaults of `kavach diff`'s flags, read from the
// command itself so that the tool and the command line cannot drift apart.
func diffDefaults() grading.Request {
	var d grading.Request
	for _, f := range diffCommand().Flags {
		switch f := f.(type) {
		case *cli.IntFlag:
			switch f.Name {
			case "variants":
				d.Variants = f.Value
			case "min-variants":
				d.MinVariants = f.Value
			}
		case *cli.Uint64Flag:
			if f.Name == "seed" {
				d.Seed = f.Value
			}
		case *cli.DurationFlag:
			switch f.Name {
			case "step-timeout":
				d.StepTimeout = f.Value
			case "start-timeout":
				d.StartTimeout = f.Value
			}
		}
	}
	return d
}
