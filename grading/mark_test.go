package grading_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/textreport"
)

// TestMarkAndView marks a failure the recording does not show (a crash
// on a step answered PONG): refused, the fixture unchanged; with Force,
// marked, and View shows it on its step.
func TestMarkAndView(t *testing.T) {
	path := grading.WritePings(t, 3)
	r := grading.MarkRequest{Fixture: path, Failure: true, Step: 2, Oracle: "crash"}
	_, err := grading.Mark(r)
	var ue *grading.UsageError
	if !errors.As(err, &ue) || !strings.Contains(ue.Hint, "--force") {
		t.Fatalf("a crash marked on a step answered ok: %v, want a usage error that names --force", err)
	}
	v, err := textreport.View(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := v.WriteStep(&out, 3); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "failure   oracle error") {
		t.Errorf("the refused mark changed the fixture: step 3 no longer the failure:\n%s", out.String())
	}

	r.Force = true
	a, err := grading.Mark(r)
	if err != nil {
		t.Fatal(err)
	}
	if a.Failure == nil || a.Failure.Step != 2 || a.Failure.Signature != "crash" {
		t.Fatalf("marked %+v, want a crash at step 2", a.Failure)
	}
	if v, err = textreport.View(path); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := v.WriteStep(&out, 2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "failure   oracle crash, signature crash") || v.Steps() != 3 {
		t.Errorf("step 2 after the forced mark (of %d steps):\n%s", v.Steps(), out.String())
	}
}
