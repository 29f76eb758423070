package textreport

import (
	"fmt"
	"strings"

	"github.com/kavach-dev/kavach/grade"
)

// KindsLine says, per kind of variant, how many reproduced of how many
// ran (a regression kind: how many the old build handled), and how many
// of those the new build failed: "field 9/12, number-form 6/20 (2
// failed), regression 8/8 handled".
func KindsLine(kinds []grade.KindCount) string {
	var parts []string
	for _, k := range kinds {
		if k.Generated == 0 {
			continue // applicable, none generated: StarvedLine
		}
		kept, what := k.Reproduced, ""
		switch {
		case OnlyHandled(k):
			kept, what = k.Handled, " handled"
		case k.Handled > 0: // aggregate: variants of the incident and regression variants
			what = fmt.Sprintf(", %d handled", k.Handled)
		}
		p := fmt.Sprintf("%s %d/%d%s", k.Kind, kept, k.Generated, what)
		if k.Failed > 0 {
			p += fmt.Sprintf(" (%d failed)", k.Failed)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// StarvedLine names the kinds applicable to the incident that got none
// of the budget (excluded ones aside), with how many of each could have
// been made; "" when none.
func StarvedLine(kinds []grade.KindCount, excluded []string) string {
	var parts []string
	for _, k := range grade.Starved(kinds, excluded) {
		parts = append(parts, fmt.Sprintf("%s (%d)", k.Kind, k.Applicable))
	}
	if len(parts) == 0 {
		return ""
	}
	return "applicable, none generated: " + strings.Join(parts, ", ") + ": the budget asked for is smaller than the kinds applicable, each of which gets one first (raise --variants)"
}

// OnlyHandled reports whether k is shown by its handled count alone: a
// kind of regression variants (regression, wakeup), or, as far as the
// counts show, kept only as such. A kind with both (aggregate: variants
// of the incident and regression variants) is shown with both.
func OnlyHandled(k grade.KindCount) bool {
	return k.Reproduced == 0 && (k.Regression || k.Handled > 0)
}
