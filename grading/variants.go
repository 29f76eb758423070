package grading

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
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
}

// VariantList is what ListVariants made: the variants, in order, and
// the steps left whole (with why).
type VariantList struct {
	Variants  []variants.Variant
	LeftWhole []string
}

// ListVariants generates the variants a diff of the fixture would run,
// learning from r.Build when it is given.
func ListVariants(ctx context.Context, r VariantsRequest) (*VariantList, error) {
	fx, in, err := loadFixture(r.Fixture)
	if err != nil {
		return nil, err
	}
	if fx.Failure == nil {
		return nil, fmt.Errorf("fixture %s has no failure to vary: mark it with 'kavach mark %s --step N --oracle ...'", r.Fixture, r.Fixture)
	}
	variator := in.Abilities().Variation
	if variator == nil {
		return nil, fmt.Errorf("the %s integration cannot vary requests", fx.Header.Protocol)
	}
	var schema kavach.Schema
	var keys [][]string
	if r.Build != "" {
		if schema, keys, err = learn(ctx, fx, in, variator, r.Build, r.TrustLaunch); err != nil {
			return nil, err
		}
	}
	vs := variants.Generate(fx.Events, fx.Failure.Step, variants.Options{
		Codec: in, Variator: variator, Schema: schema, Budget: r.Budget, Seed: r.Seed, Start: fx.Header.Start, Keys: keys, Deferred: true,
		// The kinds the fixture excludes, as kavach diff leaves them out.
		Exclude: fx.Failure.ExcludeVariants})
	return &VariantList{Variants: vs,
		LeftWhole: variants.LeftWhole(fx.Events, fx.Failure.Step, variants.Options{Codec: in, Variator: variator})}, nil
}

// learn starts the build once and asks it the field types of the
// fixture's requests and, as kavach diff asks them, the steps' keys
// (where the variants' budget goes).
func learn(ctx context.Context, fx *fixtures.Fixture, in kavach.Integration, variator *kavach.Variation, build string, trust bool) (kavach.Schema, [][]string, error) {
	if err := checkLaunch(ctx, in, fx, trust, build); err != nil {
		return nil, nil, err
	}
	l := in.WithStartTimeout(10 * time.Second)
	ab := l.Abilities()
	if ab.Learn == nil {
		return nil, nil, fmt.Errorf("the %s integration cannot learn request types from a build", fx.Header.Protocol)
	}
	rec := &Recording{path: fx.Path, fx: fx}
	p, err := l.Start(ctx, rec.Launch(build))
	if err != nil {
		return nil, nil, err
	}
	defer p.Stop()
	steps := kavach.Steps(fx.Events, in)
	var requests [][]byte
	for _, s := range steps {
		requests = append(requests, s.Request.Data)
	}
	// The kinds a diff asks about (grade.RequestKinds), so that the
	// numbering is the diff's.
	schema, err := ab.Learn(ctx, p.Addr(), grade.RequestKinds(steps, variator))
	if err != nil {
		return nil, nil, err
	}
	var keys [][]string
	if ab.Keys != nil {
		keys, _ = ab.Keys(ctx, p.Addr(), requests)
	}
	return schema, keys, nil
}

// loadFixture loads a fixture whole and finds its integration.
func loadFixture(path string) (*fixtures.Fixture, kavach.Integration, error) {
	fx, err := fixtures.Load(path)
	if err != nil {
		return nil, nil, err
	}
	if fx.Warning != nil {
		fmt.Fprintf(os.Stderr, "kavach: warning: %v\n", fx.Warning)
	}
	in, err := integrationOf(path, fx.Header)
	return fx, in, err
}
