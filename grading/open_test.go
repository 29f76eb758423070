package grading_test

import (
	"context"
	"testing"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// A diff of a short fixture opens its file once: to read it whole, hash
// it and group its steps, all in one pass (before, five reads: a header
// check, a skim for its integration, a summary to tell whether it is
// long, a load, and a hash for the report). fixtures.Opens counts every
// open of the file through the fixtures package, which is how Kavach
// reads fixtures (replay streams them through it too).
func TestGradeOpensShortFixtureOnce(t *testing.T) {
	old, fixture := getrange(t)
	fixed := redisbuild.MustBuild(t)
	r := request(old, fixed, fixture)
	r.Variants, r.MinVariants = 4, 0 // the count is the point, not the evidence
	before := fixtures.Opens(fixture)
	rep, err := grading.Grade(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if got := fixtures.Opens(fixture) - before; got != 1 {
		t.Errorf("one diff opened the fixture %d times, want 1", got)
	}
	if rep.Fixture.SHA256 == "" || rep.Fixture.Steps != len(incidents.Getrange) {
		t.Errorf("report's fixture: %+v", rep.Fixture)
	}
	sum, err := fixtures.SHA256File(fixture)
	if err != nil || sum != rep.Fixture.SHA256 {
		t.Errorf("the hash taken while reading is %s, the file's is %s (%v)", rep.Fixture.SHA256, sum, err)
	}

	// Opened by the caller (kavach diff opens it as it checks its
	// arguments), it is not opened again.
	rec, err := grading.Open(fixture, grading.ToGrade)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Long() || rec.Len() != len(incidents.Getrange) {
		t.Fatalf("the GETRANGE fixture: long %v, %d steps", rec.Long(), rec.Len())
	}
	r.Opened = rec
	before = fixtures.Opens(fixture)
	if _, err := grading.Grade(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := fixtures.Opens(fixture) - before; got != 0 {
		t.Errorf("a diff given the opened fixture opened it %d more times", got)
	}
}
