package grading_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// variantLine is what both listings say of a variant: its number, kind
// and description.
type variantLine struct {
	K           int
	Kind        string
	Description string
	Regression  bool
}

// TestVariantsNumberedAsDiff: kavach variants --build OLD lists, for a
// seed and budget, exactly the variants (numbers, kinds, descriptions) a
// diff of the same fixture with the same seed and budget ran, since both
// learn from the old build through grade.Learn. Without the build (types
// guessed) the list differs, so the comparison can fail.
func TestVariantsNumberedAsDiff(t *testing.T) {
	old, fixture := getrange(t)
	fixed := redisbuild.MustBuild(t)
	ctx := context.Background()
	const budget, seed = 24, 3

	r := request(old, fixed, fixture)
	r.Variants, r.Seed, r.BelowFloor = budget, seed, true
	rep, err := grading.Grade(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	var ran []variantLine
	for _, v := range rep.Evidence.Variants.List {
		ran = append(ran, variantLine{v.K, v.Kind, v.Description, v.Regression})
	}
	if len(ran) == 0 {
		t.Fatalf("the diff ran no variants (%s): nothing to compare", rep.Evidence.Variants.Note)
	}

	listed := func(build string) []variantLine {
		t.Helper()
		list, err := grading.ListVariants(ctx, grading.VariantsRequest{Fixture: fixture, Build: build, Budget: budget, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out []variantLine
		for _, v := range list.Variants {
			out = append(out, variantLine{v.K, v.Kind, v.Description, v.Regression})
		}
		return out
	}
	if got := listed(old); !equalLines(got, ran) {
		t.Errorf("kavach variants --build lists other variants than the diff ran:\nlisted %v\nran    %v", got, ran)
	}
	if got := listed(""); equalLines(got, ran) {
		t.Errorf("without --build (types guessed) the list is the diff's too: the comparison above cannot fail")
	}
}

func equalLines(a, b []variantLine) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLearnBuildFailsToStart: an old build that does not start is the
// same error in kavach variants --build (grade.Learn's start) as in
// kavach diff (its first replay of it), not a guessed listing.
func TestLearnBuildFailsToStart(t *testing.T) {
	_, fixture := getrange(t)
	broken := filepath.Join(t.TempDir(), "redis-server")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho no >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, lerr := grading.ListVariants(ctx, grading.VariantsRequest{Fixture: fixture, Build: broken, Budget: 8, Seed: 1})
	r := request(broken, redisbuild.MustBuild(t), fixture)
	r.Variants, r.BelowFloor = 8, true
	_, derr := grading.Grade(ctx, r)
	if lerr == nil || derr == nil || lerr.Error() != derr.Error() {
		t.Fatalf("a build that does not start:\nkavach variants --build: %v\nkavach diff: %v\nwant the same error from both", lerr, derr)
	}
	if !strings.HasPrefix(lerr.Error(), "old build: ") || !strings.Contains(lerr.Error(), "exit status 3") {
		t.Errorf("the error does not say the old build exited: %v", lerr)
	}
}
