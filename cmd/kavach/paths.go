package main

import (
	"fmt"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/internal/pathcheck"
)

// checkDiffPaths checks every path a diff is given before anything is
// replayed, so that a mistake costs no grading: the builds exist and are
// files, every fixture (fixtureArgs's list, a suite's included) can be
// opened as one, the invariants file (if given) exists, and the report
// can be written where it is asked for.
func checkDiffPaths(r diffRequest, list []string, out string) error {
	for _, b := range []struct{ name, path string }{{"old build", r.Old}, {"new build", r.New}} {
		if err := pathcheck.File(b.path); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
	}
	if err := checkFixtures(list); err != nil {
		return err
	}
	if r.Invariants != "" {
		if err := pathcheck.File(r.Invariants); err != nil {
			return fmt.Errorf("invariants: %w", err)
		}
	}
	if out != "" {
		if err := pathcheck.Output("--out", out, pathcheck.Report, diffInputs(r, list)...); err != nil {
			return err
		}
	}
	return nil
}

// diffInputs are the files a diff reads, which none of its outputs may
// replace: the builds, the fixtures and the invariants file.
func diffInputs(r diffRequest, list []string) []pathcheck.Input {
	in := []pathcheck.Input{{What: "the old build", Path: r.Old}, {What: "the new build", Path: r.New},
		{What: "the invariants file", Path: r.Invariants}}
	for _, f := range append([]string{r.Fixture}, list...) {
		in = append(in, pathcheck.Input{What: "a fixture", Path: f})
	}
	return in
}

// checkFixtures checks that each path is a fixture Kavach can read: it
// exists, can be read, and opens with a fixture's header. The error names
// the path.
func checkFixtures(list []string) error {
	for _, f := range list {
		r, err := fixtures.Open(f)
		if err != nil {
			return err
		}
		r.Close()
	}
	return nil
}
