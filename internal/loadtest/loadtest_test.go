package loadtest

import "testing"

func TestRuns(t *testing.T) {
	for _, tc := range []struct {
		full       int
		env        string
		want       int
		whyMatters string
	}{
		{150, "", 30, "a fifth"},
		{10, "", 2, "a fifth, rounded up"},
		{4, "", 2, "at least two"},
		{1, "", 1, "never more than the full count"},
		{10, "full", 10, "make test-load"},
		{150, "full", 150, "make test-load"},
	} {
		t.Setenv(Env, tc.env)
		if got := Runs(tc.full); got != tc.want {
			t.Errorf("Runs(%d) with %s=%q: %d, want %d (%s)", tc.full, Env, tc.env, got, tc.want, tc.whyMatters)
		}
	}
}
