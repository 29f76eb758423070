package textreport

import (
	"testing"

	"github.com/kavach-dev/kavach/grade"
)

// TestKindsLineNewKind: the diff's "by kind" line shows a kind added
// later as it shows the others, and one of regression variants as
// handled, whatever its name.
func TestKindsLineNewKind(t *testing.T) {
	got := KindsLine([]grade.KindCount{
		{Kind: "field", Generated: 3, Reproduced: 2},
		{Kind: "some-new-kind", Generated: 4, Reproduced: 1, Failed: 1},
		{Kind: "new-regression-kind", Generated: 5, Handled: 0, Regression: true},
	})
	want := "field 2/3, some-new-kind 1/4 (1 failed), new-regression-kind 0/5 handled"
	if got != want {
		t.Fatalf("KindsLine = %q, want %q", got, want)
	}
}
