package main

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// onUsageError turns a flag parsing error into a usage error with a hint;
// a value that does not parse is answered with an example of one that
// does.
func onUsageError(c *cli.Context, err error, _ bool) error {
	help := "run 'kavach --help' for usage"
	var flags []cli.Flag
	if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
		help = "run 'kavach " + c.Command.Name + " --help' for usage and an example"
		flags = c.Command.Flags
	}
	if m := badValue.FindStringSubmatch(err.Error()); m != nil {
		if want := exampleValue(flags, m[2]); want != "" {
			return usagef(help, "%s %q: %s", flagName(m[2]), m[1], want)
		}
	}
	return usagef(help, "%v", err)
}

// badValue is the flag package's error for a value that does not parse.
var badValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): `)

// flagName is how a flag is written: -j, --variants.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// exampleValue says what the flag named takes, with an example.
func exampleValue(flags []cli.Flag, name string) string {
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		n := flagName(name)
		switch f := f.(type) {
		case *cli.IntFlag:
			return fmt.Sprintf("want a whole number, such as %s %d", n, cmp.Or(f.Value, 4))
		case *cli.Uint64Flag:
			return fmt.Sprintf("want a whole number, 0 or more, such as %s %d", n, cmp.Or(f.Value, 1))
		case *cli.DurationFlag:
			return fmt.Sprintf("want a duration with its unit, such as %s %s (or 500ms, 2m)", n, cmp.Or(f.Value, 5*time.Second))
		case *cli.Float64Flag:
			return fmt.Sprintf("want a number, such as %s %g", n, cmp.Or(f.Value, 0.5))
		case *cli.BoolFlag:
			return fmt.Sprintf("want true or false, such as %s=true", n)
		}
	}
	return ""
}

// args checks that exactly the named positional arguments were given.
func args(c *cli.Context, names ...string) ([]string, error) {
	if c.NArg() != len(names) {
		return nil, usagef("run 'kavach "+c.Command.Name+" --help' for usage and an example",
			"kavach %s takes %d argument(s), %v; got %d", c.Command.Name, len(names), names, c.NArg())
	}
	return c.Args().Slice(), nil
}

func oneArg(c *cli.Context, name string) (string, error) {
	a, err := args(c, name)
	if err != nil {
		return "", err
	}
	return a[0], nil
}

// helpAsVerb turns `kavach --help [VERB]` (or -h, -help) into `kavach
// help [VERB]`, so that the flag answers as the verb does: a verb kavach
// does not have is named with the nearest one, where urfave/cli's own
// help would say "No help topic". A verb's own -h is left to the verb.
func helpAsVerb(args []string) []string {
	if len(args) < 2 || !slices.Contains([]string{"-h", "-help", "--help"}, args[1]) {
		return args
	}
	return append([]string{args[0], "help"}, args[2:]...)
}

// interspersed moves a command's flags before its positional arguments,
// so that `kavach show FIX --step 3` works as `kavach show --step 3 FIX`
// does (urfave/cli v2 stops at the first positional argument). Nothing
// after "--" moves: that is a build's own command line.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	cmd := app.Command(args[1])
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var flags, pos []string
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			pos = append(pos, rest[i:]...)
			i = len(rest)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) {
				i++
				flags = append(flags, rest[i])
			}
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) > 0 && pos[0] != "--" && len(flags) > 0 {
		pos = append([]string{"--"}, pos...)
	}
	out := append([]string{args[0], args[1]}, flags...)
	return append(out, pos...)
}
