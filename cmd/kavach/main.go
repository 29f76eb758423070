// Command kavach records incidents and grades fixes against them.
//
// This package turns flags into the requests of the packages that do the
// work (package grading for diff, replay, show and mark: docs/design.md,
// "Layers"), prints their results, and maps errors to exit codes in one
// place (exit.go). It holds no other logic.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kavach-dev/kavach/internal/progress"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal ends the command; it stops its builds and exits
		// on its own. Later ones are caught too, so that nothing is left
		// behind by a second Ctrl-C.
		if s, ok := (<-sigs).(syscall.Signal); ok {
			cancel(&interrupted{sig: s})
		}
	}()
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code)
}

// interrupted is the cause of a command's context cancelled by a signal.
type interrupted struct{ sig syscall.Signal }

func (e *interrupted) Error() string {
	name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[e.sig]
	if name == "" {
		name = e.sig.String()
	}
	return "interrupted by " + name
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	errw := progress.New(stderr)
	app := newApp(stdin, stdout, errw)
	err := app.RunContext(ctx, interspersed(app, helpAsVerb(args)))
	errw.Close() // the progress line gone before the last words
	code := exitCode(err)
	var sig *interrupted
	if code == exitCannot && errors.As(context.Cause(ctx), &sig) {
		// A command stopped by a signal did not fail: it was stopped. Exit
		// as a shell reports a process a signal ended (130, 143).
		fmt.Fprintf(errw, "kavach: %v\n", sig)
		return 128 + int(sig.sig)
	}
	if err != nil && code != exitRed && code != exitUnverified {
		fmt.Fprintf(errw, "kavach: %v\n", err)
	}
	return code
}

// warnTo is how a command tells a warning about a fixture that does not
// stop it (a damaged tail): one line on w, its standard error.
func warnTo(w io.Writer) func(error) {
	return func(err error) { fmt.Fprintf(w, "kavach: warning: %v\n", err) }
}
