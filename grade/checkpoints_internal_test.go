package grade

import (
	"slices"
	"testing"
)

// TestPlanCheckpoints: checkpoints go where they spare more steps than
// they cost, each variant starts from the latest at or before the step it
// changes, and one no other variant shares is not made.
func TestPlanCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes []int
		want    []int
	}{
		{"all at the failing step", []int{4900, 4900, 4900, 0}, []int{4900, 4900, 4900, 0}},
		{"one alone is not worth it", []int{4900, 0}, []int{0, 0}},
		{"near ones share the earlier", []int{4899, 4900, 4900, 4899}, []int{4899, 4899, 4899, 4899}},
		// Four at 4,900 and two early: the early pair spares 2 × 100
		// steps for a cost of 2 × 99: made; each later variant starts
		// from 4,900 all the same.
		{"a spread", []int{100, 100, 4900, 4900, 4900, 4900}, []int{100, 100, 4900, 4900, 4900, 4900}},
		// Two at 3,000 and 3,001 spare 6,001 for a cost of 5,998 from
		// the start: one checkpoint, at 3,000.
		{"barely", []int{3000, 3001}, []int{3000, 3000}},
		// Two at 1,000 each after one at 999: a checkpoint at 999 spares
		// 2,997 (cost 1,996); then 1,000 spares 2 more for a cost of
		// 1,998: not made.
		{"not worth moving", []int{999, 1000, 1000}, []int{999, 999, 999}},
	} {
		if got := planCheckpoints(tc.changes); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
