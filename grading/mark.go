package grading

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/invariants"
)

// MarkRequest is `kavach mark FIXTURE`: what to change in the fixture's
// records. Each of a failure, a floor and invariants may be set alone.
type MarkRequest struct {
	Fixture string
	// Failure marks step Step failing by Oracle (crash, hang, error,
	// error:CLASS, invariant:NAME), the variant kinds Exclude left out.
	Failure bool
	Step    int
	Oracle  string
	Exclude []string
	Force   bool            // mark the failure even where the recording does not show it
	Floor   *fixtures.Floor // nil: the floor is left as it is
	// Invariants is an invariants file to embed in the fixture; "": none.
	Invariants string
}

// Mark amends the fixture as r asks, after checking that the recording
// shows the failure (unless Force) and that an invariant failure's
// invariant is declared. The fixture is rewritten to a new file and
// renamed into place: a failed mark loses nothing. It returns what it
// wrote.
func Mark(r MarkRequest) (fixtures.Amendment, error) {
	rec, err := Open(r.Fixture, ToMark)
	if err != nil {
		return fixtures.Amendment{}, err
	}
	fx := rec.fx
	a := fixtures.Amendment{Floor: r.Floor}
	var f kavach.Failure
	if r.Failure {
		if f, err = r.markedFailure(fx); err != nil {
			return fixtures.Amendment{}, err
		}
		a.Failure = &f
	}
	if a.Invariants, err = r.embedded(); err != nil {
		return fixtures.Amendment{}, err
	}
	if err := r.check(fx, f); err != nil {
		return fixtures.Amendment{}, err
	}
	if err := fixtures.Amend(r.Fixture, a); err != nil {
		return fixtures.Amendment{}, err
	}
	return a, nil
}

// markedFailure is the failure Step and Oracle mark, with the variant
// kinds Exclude leaves out.
func (r MarkRequest) markedFailure(fx *fixtures.Fixture) (kavach.Failure, error) {
	oracle, err := kavach.ParseOracle(r.Oracle)
	if err != nil {
		return kavach.Failure{}, usagef("", "%v", err)
	}
	f, err := FailureAt(fx, r.Step, oracle)
	if err != nil {
		return f, usagef("run 'kavach show "+fx.Path+"' to see the steps", "%v", err)
	}
	f.ExcludeVariants = r.Exclude
	if err := kavach.CheckVariantKinds(f.ExcludeVariants); err != nil {
		return f, usagef("", "--exclude: %v", err)
	}
	return f, nil
}

// embedded are the invariants of the file Invariants names, read and
// parsed to be embedded; nil without one.
func (r MarkRequest) embedded() (*fixtures.Invariants, error) {
	file := r.Invariants
	if file == "" {
		return nil, nil
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read invariants: %w", err)
	}
	if _, err := invariants.Parse(file, string(src)); err != nil {
		return nil, err
	}
	return &fixtures.Invariants{Name: filepath.Base(file), Source: string(src)}, nil
}

// check refuses a failure whose invariant no invariants file declares,
// and, unless Force, one the recording does not show.
func (r MarkRequest) check(fx *fixtures.Fixture, f kavach.Failure) error {
	if name := f.Oracle.Invariant; r.Failure && name != "" {
		set, err := LoadInvariants(r.Invariants, fx)
		if err != nil {
			return err
		}
		if set == nil || !set.Has(name) {
			return usagef("declare it in an invariants file and pass --invariants FILE", "invariant %q: no invariants file declares it", name)
		}
	}
	if !r.Failure || r.Force {
		return nil
	}
	var set *invariants.Set
	if f.Oracle.Invariant != "" {
		set, _ = LoadInvariants(r.Invariants, fx)
	}
	if err := CheckMark(fx, set, f); err != nil {
		return usagef("run 'kavach show "+fx.Path+" --step "+strconv.Itoa(f.Step)+"' to see the step, or pass --force to mark it anyway", "%v", err)
	}
	return nil
}

// Marked is what Mark wrote to Fixture (its Amendment), with the Oracle
// asked for as it was given: `kavach mark` says it back, as lines on
// stderr (textreport.Marked) or as JSON on stdout (textreport.MarkedJSON).
type Marked struct {
	Fixture   string
	Oracle    string
	Amendment fixtures.Amendment
}
