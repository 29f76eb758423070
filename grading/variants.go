package grading

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/variants"
)

// VariantsRequest is `kavach variants FIXTURE`: the variants a diff of
// the fixture would generate, without running them.
type VariantsRequest struct {
	Fixture string
	// Build, when set, is the old build, started once to learn the
	// requests' field types and keys as kavach diff does; "": field types
	// are guessed, and the numbering may differ from the diff's.
	Build       string
	Budget      int
	Seed        uint64
	TrustLaunch bool // --trust-fixture-launch
	// Warn, if set, is told what is wrong with the fixture that does not
	// stop the listing (a damaged tail); nil: nobody.
	Warn func(error)
}

// VariantList is what ListVariants made: the variants, in order, and
// the steps left whole (with why).
type VariantList struct {
	Variants  []variants.Variant
	LeftWhole []string
	// Applicable is how many variants of each kind could be made before
	// the budget kept some; Excluded the kinds the fixture excludes.
	Applicable map[string]int
	Excluded   []string
}

// ListVariants generates the variants a diff of the fixture would run,
// learning from r.Build when it is given.
func ListVariants(ctx context.Context, r VariantsRequest) (*VariantList, error) {
	rec, err := Open(r.Fixture, ToVary)
	if err != nil {
		return nil, err
	}
	if w := rec.Warning(); w != nil && r.Warn != nil {
		r.Warn(w)
	}
	fx, in := rec.fx, rec.in
	if fx.Failure == nil {
		return nil, fmt.Errorf("fixture %s has no failure to vary: mark it with 'kavach mark %s --step N --oracle ...'", r.Fixture, r.Fixture)
	}
	variator := in.Abilities().Variation
	if variator == nil {
		return nil, fmt.Errorf("the %s integration cannot vary requests", fx.Header.Protocol)
	}
	var schema kavach.Schema
	var l grade.Learned
	if r.Build != "" {
		if l, err = learn(ctx, rec, r.Build, r.TrustLaunch); err != nil {
			return nil, err
		}
		schema = l.Schema
	}
	vs, applicable := variants.Counted(fx.Events, fx.Failure.Step, variants.Options{
		Codec: in, Variator: variator, Schema: schema, Budget: r.Budget, Cap: variants.CapFor(r.Budget), Seed: r.Seed, Start: fx.Header.Start, Keys: l.Keys, Writes: l.Writes, Replaces: l.Replaces, Deferred: true,
		// The kinds the fixture excludes, as kavach diff leaves them out.
		Exclude: fx.Failure.ExcludeVariants, Upgrade: grade.CanHandOff(in, fx)})
	return &VariantList{Variants: vs, Applicable: applicable, Excluded: fx.Failure.ExcludeVariants,
		LeftWhole: variants.LeftWhole(fx.Events, fx.Failure.Step, variants.Options{Codec: in, Variator: variator})}, nil
}

// learn starts the build once and asks it, as kavach diff asks its old
// build (grade.Learn), the field types of the fixture's requests and the
// steps' keys, the keys each writes and those it replaces whole (where
// the variants' budget goes).
func learn(ctx context.Context, rec *Opened, build string, trust bool) (grade.Learned, error) {
	fx, in := rec.fx, rec.in
	if err := checkLaunch(ctx, in, fx, trust, build); err != nil {
		return grade.Learned{}, err
	}
	l, err := grade.Learn(ctx, in.WithStartTimeout(10*time.Second), rec.Launch(build), rec.Steps(), grade.Learning{Schema: true, Keys: true})
	if errors.Is(err, grade.ErrCannotLearn) {
		return grade.Learned{}, fmt.Errorf("the %s integration cannot learn request types from a build", fx.Header.Protocol)
	}
	if err != nil {
		return grade.Learned{}, err
	}
	return l, nil
}

// RanVariants are the variants a diff ran, as its report numbers them.
type RanVariants struct {
	List []grade.VariantEvidence
	// ByKind and Excluded are the report's (applicable kinds that got
	// none of the budget).
	ByKind   []grade.KindCount
	Excluded []string
}

// ReportVariants reads the variants a diff ran from the report it wrote
// at path.
func ReportVariants(path string) (*RanVariants, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	rep, err := parseReport(path, b)
	if err != nil {
		return nil, err
	}
	ve := rep.Evidence.Variants
	return &RanVariants{List: ve.List, ByKind: ve.ByKind, Excluded: ve.Excluded}, nil
}
