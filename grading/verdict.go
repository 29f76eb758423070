package grading

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/kavach-dev/kavach/grade"
)

// VerdictCheck is a report's verdict decided again from its evidence
// alone (`kavach verdict`): never from the verdict or findings written in
// it. Its JSON is `kavach verdict --json`'s output.
type VerdictCheck struct {
	Report  string `json:"report"`
	Verdict string `json:"verdict"` // as written in the report
	Derived string `json:"derived"` // as its evidence gives it
	Agrees  bool   `json:"agrees"`
	// Explained says how the explained steps after the failure the report
	// lists differ from those its evidence gives (agrees is then false).
	Explained string `json:"explained_disagrees,omitempty"`
	// Variants are the variants whose judgment from their steps differs
	// from the report's (agrees is then false).
	Variants []grade.VariantChange `json:"variants_disagree,omitempty"`
	// Fixtures are a suite's fixtures, each re-derived (Report is then
	// the fixture's path).
	Fixtures []VerdictCheck `json:"fixtures,omitempty"`
	suite    bool
}

// CheckVerdict reads the report at path, a fixture's or a suite's, and
// decides its verdict again: each variant judged again from its steps
// (grade.JudgeVariants), the verdict derived from the evidence so judged,
// and the steps the report explains after the failure compared with those
// its evidence explains.
func CheckVerdict(path string) (*VerdictCheck, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var probe struct {
		Suite bool `json:"suite"`
	}
	if json.Unmarshal(b, &probe) == nil && probe.Suite {
		return checkSuiteVerdict(path, b)
	}
	rep, err := parseReport(path, b)
	if err != nil {
		return nil, err
	}
	judged, changed := grade.JudgeVariants(rep.Evidence)
	verdict, _ := grade.Derive(judged)
	got := verdict.String()
	// A report from before it listed the explained steps has none to check.
	explainedOff := ""
	if rep.Explained != nil && got == rep.Verdict {
		if a, b := explainedList(rep.Explained), explainedList(grade.Explain(rep.Evidence)); a != b {
			explainedOff = fmt.Sprintf("the report explains after the failure %s, its evidence %s", a, b)
		}
	}
	return &VerdictCheck{Report: path, Verdict: rep.Verdict, Derived: got, Explained: explainedOff, Variants: changed,
		Agrees: got == rep.Verdict && explainedOff == "" && len(changed) == 0}, nil
}

// parseReport decodes b, the bytes of a fixture's report read from path,
// and refuses one of another schema version.
func parseReport(path string, b []byte) (*grade.Report, error) {
	var rep grade.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("report %s: not a kavach diff report: %w", path, err)
	}
	if rep.SchemaVersion != grade.SchemaVersion {
		return nil, fmt.Errorf("report %s: schema version %d, this Kavach reads %d", path, rep.SchemaVersion, grade.SchemaVersion)
	}
	return &rep, nil
}

// checkSuiteVerdict is CheckVerdict of a suite's report: every fixture's
// verdict and the headline, re-derived from the evidence.
func checkSuiteVerdict(path string, b []byte) (*VerdictCheck, error) {
	var s grade.SuiteReport
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("report %s: not a kavach diff report: %w", path, err)
	}
	if slices.Contains(s.Reports, nil) {
		return nil, fmt.Errorf("report %s: a suite's report with an empty fixture report", path)
	}
	headline, parts := grade.DeriveSuite(&s)
	out := &VerdictCheck{Report: path, Verdict: s.Verdict, Derived: headline.String(), suite: true}
	agrees := out.Derived == out.Verdict
	for i, r := range s.Reports {
		f := VerdictCheck{Report: r.Fixture.Path, Verdict: r.Verdict, Derived: parts[i].String()}
		f.Agrees = f.Derived == f.Verdict
		agrees = agrees && f.Agrees
		out.Fixtures = append(out.Fixtures, f)
	}
	out.Agrees = agrees
	return out, nil
}

// Print says whether the verdict agrees, and each disagreement on a line
// of its own.
func (v *VerdictCheck) Print(w io.Writer) {
	if v.suite {
		v.printSuite(w)
		return
	}
	for _, c := range v.Variants {
		fmt.Fprintf(w, "disagrees: variant %d: the report says %s, its steps give %s\n", c.K, c.Written, c.Derived)
	}
	switch {
	case v.Explained != "":
		fmt.Fprintf(w, "disagrees: %s\n", v.Explained)
	case v.Derived != v.Verdict:
		fmt.Fprintf(w, "disagrees: the report says %s, its evidence gives %s\n", v.Verdict, v.Derived)
	case len(v.Variants) == 0:
		fmt.Fprintf(w, "agrees: %s\n", v.Verdict)
	}
}

func (v *VerdictCheck) printSuite(w io.Writer) {
	say := func(agrees bool, c VerdictCheck, what string) {
		if agrees {
			fmt.Fprintf(w, "agrees: %s%s\n", c.Verdict, what)
		} else {
			fmt.Fprintf(w, "disagrees: %s says %s, its evidence gives %s\n", strings.TrimPrefix(what, " "), c.Verdict, c.Derived)
		}
	}
	say(v.Derived == v.Verdict, *v, " (the suite)")
	for _, f := range v.Fixtures {
		say(f.Agrees, f, " "+f.Report)
	}
}

// explainedList is explained steps as "step 4 inputs-differ, step 5
// changed-refusal", or "none".
func explainedList(ex []grade.Explained) string {
	var parts []string
	for _, e := range ex {
		parts = append(parts, fmt.Sprintf("step %d %s", e.Step, e.Reason))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
