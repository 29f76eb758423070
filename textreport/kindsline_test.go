package textreport

import (
	"testing"

	"github.com/kavach-dev/kavach/grade"
)

// The by-kind line counts wakeup variants, regression variants kept
// whole, as handled, and aggregate variants, of the incident and
// regression both, with both counts; the kinds before them as before.
func TestKindsLineNewKinds(t *testing.T) {
	got := KindsLine([]grade.KindCount{
		{Kind: "field", Generated: 12, Reproduced: 9},
		{Kind: "regression", Generated: 8, Handled: 8, Regression: true},
		{Kind: "wakeup", Generated: 8, Handled: 2, Failed: 1, Regression: true},
		{Kind: "aggregate", Generated: 30, Reproduced: 9, Handled: 6, Failed: 1, Regression: true},
	})
	want := "field 9/12, regression 8/8 handled, wakeup 2/8 handled (1 failed), aggregate 9/30, 6 handled (1 failed)"
	if got != want {
		t.Errorf("KindsLine:\n got %s\nwant %s", got, want)
	}
	if got := KindsLine([]grade.KindCount{{Kind: "wakeup", Generated: 3, Regression: true}}); got != "wakeup 0/3 handled" {
		t.Errorf("no wakeup variant handled: %s", got)
	}
}
