package main

import (
	"fmt"

	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/pathcheck"
)

// checkDiffPaths checks every path a diff is given before anything is
// replayed, so that a mistake costs no grading: the builds exist and are
// files, every fixture (FixtureArgs's list, a suite's included) can be
// opened as one, the invariants file (if given) exists, and the report
// can be written where it is asked for. One fixture (not a suite) is
// opened for grading here, once: the Recording returned.
func checkDiffPaths(r grading.Request, list []string, suite bool, out string) (*grading.Recording, error) {
	for _, b := range []struct{ name, path string }{{"old build", r.Old}, {"new build", r.New}} {
		if err := pathcheck.File(b.path); err != nil {
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
	}
	var rec *grading.Recording
	var err error
	if suite {
		err = grading.CheckFixtures(list)
	} else {
		rec, err = grading.Open(r.Fixture)
	}
	if err != nil {
		return nil, err
	}
	if r.Invariants != "" {
		if err := pathcheck.File(r.Invariants); err != nil {
			return nil, fmt.Errorf("invariants: %w", err)
		}
	}
	if out != "" {
		if err := pathcheck.Output("--out", out, pathcheck.Report, diffInputs(r, list)...); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// diffInputs are the files a diff reads, which none of its outputs may
// replace: the builds, the fixtures and the invariants file.
func diffInputs(r grading.Request, list []string) []pathcheck.Input {
	in := []pathcheck.Input{{What: "the old build", Path: r.Old}, {What: "the new build", Path: r.New},
		{What: "the invariants file", Path: r.Invariants}}
	for _, f := range append([]string{r.Fixture}, list...) {
		in = append(in, pathcheck.Input{What: "a fixture", Path: f})
	}
	return in
}
