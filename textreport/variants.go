package textreport

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/internal/jsonout"
)

// VariantsJSON prints the variants as JSON Lines, one variant a line, as
// `kavach variants --json` does.
func VariantsJSON(w io.Writer, l *grading.VariantList) error {
	return jsonout.Lines(w, l.Variants)
}

// Variants prints the variants as `kavach variants` does: K, kind and
// description, then, kind by kind, how many could be made and how many
// the budget kept, and the kinds it kept none of.
func Variants(w io.Writer, l *grading.VariantList) error {
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
	counts := grade.WithApplicable(grade.CountKinds(kinds), l.Applicable)
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tAPPLICABLE\tGENERATED")
	for _, k := range counts {
		generated := strconv.Itoa(k.Generated)
		if slices.Contains(l.Excluded, k.Kind) {
			generated = "excluded"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", k.Kind, k.Applicable, generated)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if line := StarvedLine(counts, l.Excluded); line != "" {
		fmt.Fprintln(w, line)
	}
	return nil
}

// LeftWhole says the steps the variants left whole, and why, a line
// each, as `kavach variants` says them on stderr before the list.
func LeftWhole(w io.Writer, l *grading.VariantList) {
	for _, s := range l.LeftWhole {
		fmt.Fprintf(w, "kavach: left whole: %s\n", s)
	}
}

// RanVariantsJSON prints the variants a diff ran as JSON Lines, one a
// line, as `kavach variants --report REPORT --json` does.
func RanVariantsJSON(w io.Writer, r *grading.RanVariants) error {
	return jsonout.Lines(w, r.List)
}

// RanVariants prints the variants a diff ran as `kavach variants --report
// REPORT` does: K, kind, what became of it and its description, then
// their count by kind.
func RanVariants(w io.Writer, r *grading.RanVariants) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "K\tKIND\tRESULT\tDESCRIPTION")
	for _, v := range r.List {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", v.K, v.Kind, VariantResult(v), v.Description)
	}
	if err := tw.Flush(); err != nil || len(r.List) == 0 {
		return err
	}
	if err := writeKinds(w, grade.CountKinds(r.List)); err != nil {
		return err
	}
	if line := StarvedLine(r.ByKind, r.Excluded); line != "" {
		fmt.Fprintln(w, line)
	}
	return nil
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
func writeKinds(w io.Writer, kinds []grade.KindCount) error {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
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
