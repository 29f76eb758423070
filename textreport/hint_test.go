package textreport

import (
	"strings"
	"testing"

	"github.com/kavach-dev/kavach/grade"
)

// A sibling variant that fails says where the defect still is: in
// another command of the family, not in another input.
func TestSiblingHint(t *testing.T) {
	rep := &grade.Report{Findings: []grade.Finding{{Verdict: grade.Verdict{Kind: grade.VariantFailed, Variant: 3, Step: 4},
		Detail: "step 3: EVAL → EVALSHA … (script runners)"}}}
	rep.Evidence.Variants.List = []grade.VariantEvidence{
		{K: 2, Kind: "field", Kept: true},
		{K: 3, Kind: "sibling", Kept: true, FailedStep: 4, Description: "step 3: EVAL → EVALSHA … (script runners)"},
	}
	args := []string{"old", "new", "f.kavach"}
	if h := Hint(rep, args, "r.json"); !strings.Contains(h, "another command of the same\nfamily") || !strings.Contains(h, "kavach variants --report r.json") {
		t.Errorf("sibling variant failed, hint:\n%s", h)
	}
	rep.Evidence.Variants.List[1].Kind = "field"
	if h := Hint(rep, args, "r.json"); !strings.Contains(h, "fix the cause, not the one input") {
		t.Errorf("field variant failed, hint:\n%s", h)
	}
}
