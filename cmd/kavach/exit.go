package main

import (
	"errors"
	"fmt"
)

// Exit statuses, as docs/design.md §3 defines them. They are mapped from errors
// here and nowhere else.
const (
	exitFixed      = 0 // fixed, held, or any verb that did its job
	exitRed        = 1 // diverged, still_failing, invariant_violated, variant_failed; verdict disagrees
	exitCannot     = 2 // Kavach could not do it: bad arguments, bad fixture, a build that will not start
	exitUnverified = 3 // unverified
)

// verdictError ends a command whose result is a verdict that is not
// "fixed". It has already been printed; only the status remains.
type verdictError struct {
	code int
}

func (e *verdictError) Error() string { return fmt.Sprintf("verdict (exit %d)", e.code) }

// usageError is a mistake in how Kavach was called; hint says what to do.
type usageError struct {
	msg, hint string
}

func (e *usageError) Error() string {
	if e.hint == "" {
		return e.msg
	}
	return e.msg + "\n" + e.hint
}

func usagef(hint, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), hint: hint}
}

// exitCode maps the error a command returned to the process's exit status.
// Every error that is not a verdict means Kavach could not do its job.
func exitCode(err error) int {
	var v *verdictError
	switch {
	case err == nil:
		return exitFixed
	case errors.As(err, &v):
		return v.code
	}
	return exitCannot
}
