package grading

import (
	"fmt"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/internal/pathcheck"
)

// CheckPaths checks every path a diff is given before anything is
// replayed, so that a mistake costs no grading: the builds exist and are
// files, every fixture (list, a suite's included) can be opened as one,
// the invariants file (if given) exists, and the report can be written
// at out (outFlag names the option that asked for it). One fixture (not
// a suite) is opened for grading here, once: the Opened returned.
func (r Request) CheckPaths(list []string, suite bool, outFlag, out string) (*Opened, error) {
	for _, b := range []struct{ name, path string }{{"old build", r.Old}, {"new build", r.New}} {
		if err := pathcheck.File(b.path); err != nil {
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
	}
	var rec *Opened
	var err error
	if suite {
		err = CheckFixtures(list)
	} else {
		rec, err = Open(r.Fixture, ToGrade)
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
		if err := pathcheck.Output(outFlag, out, pathcheck.Report, r.Inputs(list)...); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// Inputs are the files a diff reads, which none of its outputs may
// replace: the builds, the fixtures (r's and list) and the invariants
// file.
func (r Request) Inputs(list []string) []pathcheck.Input {
	in := []pathcheck.Input{{What: "the old build", Path: r.Old}, {What: "the new build", Path: r.New},
		{What: "the invariants file", Path: r.Invariants}}
	for _, f := range append([]string{r.Fixture}, list...) {
		in = append(in, pathcheck.Input{What: "a fixture", Path: f})
	}
	return in
}

// SameBuild reports whether the builds old and new are the same file
// (one SHA-256, returned): a NEW given by mistake, graded against itself
// (still_failing, or unverified). A build that cannot be read is not the
// same.
func SameBuild(old, new string) (string, bool) {
	a, err := fixtures.SHA256File(old)
	if err != nil {
		return "", false
	}
	b, err := fixtures.SHA256File(new)
	return a, err == nil && a == b
}
