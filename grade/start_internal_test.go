package grade

import (
	"slices"
	"testing"
)

// TestStartOrder: the perturbed replay (the longest) takes a place
// before the others, which keep their order; with no perturbed replay
// the order is the launches'.
func TestStartOrder(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n, first int
		want     []int
	}{
		{4, 2, []int{2, 0, 1, 3}},
		{3, 1, []int{1, 0, 2}},
		{2, -1, []int{0, 1}},
		{1, -1, []int{0}},
	} {
		if got := startOrder(c.n, c.first); !slices.Equal(got, c.want) {
			t.Errorf("startOrder(%d, %d) = %v, want %v", c.n, c.first, got, c.want)
		}
	}
}
