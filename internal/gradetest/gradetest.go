// Package gradetest holds what the grade's two test packages (grade's
// own and grade/scenarios) both ask of a report or an invariant file, so
// that each checks it the same way.
package gradetest

import (
	"encoding/json"
	"testing"

	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/invariants"
)

// ReadBack is rep read back through JSON, as kavach verdict reads it; it
// fails the test when the evidence read back does not give the report's
// verdict again.
func ReadBack(t testing.TB, rep *grade.Report) grade.Report {
	t.Helper()
	b, _ := json.Marshal(rep)
	var back grade.Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if parts, _ := grade.Derive(back.Evidence); parts.String() != rep.Verdict {
		t.Errorf("the report's evidence gives %s, its verdict says %s", parts, rep.Verdict)
	}
	// Each variant judged again from its steps is judged as it was.
	judged, changed := grade.JudgeVariants(back.Evidence)
	for _, c := range changed {
		t.Errorf("variant %d: the report says %s, its steps give %s", c.K, c.Written, c.Derived)
	}
	if parts, _ := grade.Derive(judged); parts.String() != rep.Verdict {
		t.Errorf("the report's evidence, its variants judged again, gives %s, its verdict says %s", parts, rep.Verdict)
	}
	return back
}

// ParseSet parses src, an invariant file's text, or fails the test.
func ParseSet(t testing.TB, src string) *invariants.Set {
	t.Helper()
	set, err := invariants.Parse("after.invariants", src)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// OldReplays remembers the old builds' replays of variants for the tests
// that grade several new builds against one old build and fixture: each
// variant runs on the old build once (in each test binary). The tests of
// a verdict's stability (UnderLoad) and those that count or fault
// replays grade without it.
var OldReplays = grade.NewMemo()
