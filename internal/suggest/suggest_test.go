package suggest

import "testing"

// TestNearest: a mistyped verb is named with the verb meant (a swap, a
// start of it, another case), and one far from every verb is named with
// the nearest but not as what was meant.
func TestNearest(t *testing.T) {
	verbs := []string{"record", "mark", "show", "replay", "variants", "diff", "verdict", "report", "recount", "grade", "mcp", "help", "version"}
	for _, tc := range []struct {
		s     string
		want  string
		close bool
	}{
		{"hlep", "help", true},
		{"recrod", "record", true},
		{"rec", "record", true},
		{"DIFF", "diff", true},
		{"verdcit", "verdict", true},
		{"zzzzzzzzzz", "", false},
	} {
		got, close := Nearest(tc.s, verbs)
		if close != tc.close || (tc.want != "" && got != tc.want) {
			t.Errorf("Nearest(%q) = %q, %v; want %q, %v", tc.s, got, close, tc.want, tc.close)
		}
	}
	if got, close := Nearest("x", nil); got != "" || close {
		t.Errorf("Nearest of no names = %q, %v; want \"\", false", got, close)
	}
}

// TestEditDistance: insertions, deletions and substitutions are one edit
// each, and two neighbours swapped are one edit.
func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"help", "help", 0},
		{"hlep", "help", 1},
		{"kitten", "sitting", 3},
		{"diff", "dif", 1},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
