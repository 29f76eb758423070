// Command kavach records incidents and grades fixes against them.
//
// This package turns flags into the options of the packages that do the
// work, lists the integrations, and maps errors to exit codes in one place
// (exit.go). It holds no other logic.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout, stderr)
	err := app.RunContext(ctx, interspersed(app, args))
	code := exitCode(err)
	if err != nil && code != exitRed && code != exitUnverified {
		fmt.Fprintf(stderr, "kavach: %v\n", err)
	}
	return code
}
