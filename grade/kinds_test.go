package grade

import (
	"reflect"
	"testing"
)

// TestCountKindsNewKind: a kind CountKinds has never heard of (one added
// later) is counted like the others, after the known ones, and a
// regression kind of any name is counted as handled.
func TestCountKindsNewKind(t *testing.T) {
	t.Parallel()
	list := []VariantEvidence{
		{K: 1, Kind: "some-new-kind", Kept: true, FailedStep: 4},
		{K: 2, Kind: "field", Kept: true},
		{K: 3, Kind: "some-new-kind"},
		{K: 4, Kind: "new-regression-kind", Regression: true, Kept: true},
		{K: 5, Kind: "new-regression-kind", Regression: true},
	}
	got := CountKinds(list)
	want := []KindCount{
		{Kind: "field", Generated: 1, Reproduced: 1},
		{Kind: "new-regression-kind", Generated: 2, Handled: 1, Regression: true},
		{Kind: "some-new-kind", Generated: 2, Reproduced: 1, Failed: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("CountKinds = %+v\nwant %+v", got, want)
	}
}
