package grading

import (
	"fmt"
	"github.com/kavach-dev/kavach/internal/jsonout"
	"io"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/kavach-dev/kavach/grade"
)

// PrintJSON prints the variants as JSON Lines, one variant a line, as
// `kavach variants --json` does.
func (l *VariantList) PrintJSON(w io.Writer) error {
	return jsonout.Lines(w, l.Variants)
}

// Print prints the variants as `kavach variants` does: K, kind and
// description, then their count by kind.
func (l *VariantList) Print(w io.Writer) error {
	vs := l.Variants
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "K\tKIND\tDESCRIPTION")
	kinds := make([]grade.VariantEvidence, len(vs))
	for i, v := range vs {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", v.K, v.Kind, v.Description)
		kinds[i] = grade.VariantEvidence{K: v.K, Kind: v.Kind, Regression: v.Regression}
	}
	if err := tw.Flush(); err != nil || len(vs) == 0 {
		return err
	}
	return writeKinds(w, grade.CountKinds(kinds), false)
}

// RanVariants are the variants a diff ran, as its report numbers them.
type RanVariants struct {
	List []grade.VariantEvidence
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
	return &RanVariants{List: rep.Evidence.Variants.List}, nil
}

// PrintJSON prints the variants as JSON Lines, one a line, as
// `kavach variants --report REPORT --json` does.
func (r *RanVariants) PrintJSON(w io.Writer) error {
	return jsonout.Lines(w, r.List)
}

// Print prints the variants as `kavach variants --report REPORT` does:
// K, kind, what became of it and its description, then their count by
// kind.
func (r *RanVariants) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "K\tKIND\tRESULT\tDESCRIPTION")
	for _, v := range r.List {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", v.K, v.Kind, VariantResult(v), v.Description)
	}
	if err := tw.Flush(); err != nil || len(r.List) == 0 {
		return err
	}
	return writeKinds(w, grade.CountKinds(r.List), true)
}

// VariantResult is what became of a variant in a diff.
func VariantResult(v grade.VariantEvidence) string {
	switch {
	case !v.Kept && v.Regression:
		return "not-kept(old build failed)"
	case !v.Kept:
		return "not-kept(old build did not fail)"
	case v.Skipped:
		return "skipped"
	case v.FailedStep > 0:
		return fmt.Sprintf("failed@%d", v.FailedStep)
	}
	return "passed"
}

// writeKinds prints the variants' count by kind, after their list: how
// many there are of each and, from a report, how many reproduced the
// failure on the old build (a regression kind: were handled by it) and
// how many of those the new build failed.
func writeKinds(w io.Writer, kinds []grade.KindCount, ran bool) error {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !ran {
		fmt.Fprintln(tw, "KIND\tVARIANTS")
		for _, k := range kinds {
			fmt.Fprintf(tw, "%s\t%d\n", k.Kind, k.Generated)
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "KIND\tVARIANTS\tREPRODUCED\tHANDLED\tFAILED")
	for _, k := range kinds {
		reproduced, handled := strconv.Itoa(k.Reproduced), "-"
		switch {
		case OnlyHandled(k):
			reproduced, handled = "-", strconv.Itoa(k.Handled)
		case k.Handled > 0:
			handled = strconv.Itoa(k.Handled)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\n", k.Kind, k.Generated, reproduced, handled, k.Failed)
	}
	return tw.Flush()
}
