package main

import (
	"fmt"

	"github.com/kavach-dev/kavach/internal/pathcheck"
)

// checkDiffPaths checks every path a diff is given before anything is
// replayed, so that a mistake costs no grading: the builds exist and are
// files, the invariants file (if given) exists, and the report can be
// written where it is asked for.
func checkDiffPaths(r diffRequest, out string) error {
	for _, b := range []struct{ name, path string }{{"old build", r.Old}, {"new build", r.New}} {
		if err := pathcheck.File(b.path); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
	}
	if r.Invariants != "" {
		if err := pathcheck.File(r.Invariants); err != nil {
			return fmt.Errorf("invariants: %w", err)
		}
	}
	if out != "" {
		if err := pathcheck.Out(out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	return nil
}
