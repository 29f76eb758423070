package grade

import (
	"slices"
	"testing"
)

// The dependency slice, rule by rule, on steps whose keys are given: a
// writer of a key the slice touches joins it with the keys it reads; a
// reader does not; a connection's state-setting steps join when a later
// step of it is in the slice, the server's always; a step of unknown
// writes joins, and one of unknown keys brings every earlier write; paths
// relate to the paths below them; a slice over its maximum is refused.
func TestDependencySlice(t *testing.T) {
	t.Parallel()
	type st struct {
		conn         uint64
		flag         uint8
		keys, writes []string
	}
	unknown := []string(nil)
	build := func(steps []st) *stepKeys {
		k := &stepKeys{}
		for _, s := range steps {
			k.add(s.conn, s.flag, s.keys, s.writes)
		}
		return k
	}
	for _, tc := range []struct {
		name  string
		steps []st
		want  []int
		keys  []string
	}{
		{"writers, transitively; readers left out", []st{
			{1, 0, []string{"src"}, []string{"src"}},     // 1 SET src: read by 3
			{1, 0, []string{"other"}, []string{"other"}}, // 2 SET other
			{1, 0, []string{"src", "k"}, []string{"k"}},  // 3 COPY src k
			{1, 0, []string{"k"}, []string{}},            // 4 GET k: a read
			{2, 0, []string{"k"}, []string{"k"}},         // 5 failing
		}, []int{1, 3, 5}, []string{"k", "src"}},
		{"state of the slice's connections and of the server", []st{
			{1, connState, []string{}, []string{}},   // 1 SELECT on conn 1: in
			{2, connState, []string{}, []string{}},   // 2 SELECT on conn 2: no step of it in
			{3, serverState, []string{}, []string{}}, // 3 SCRIPT LOAD: in
			{1, 0, []string{"k"}, []string{"k"}},     // 4
			{2, 0, []string{"j"}, []string{"j"}},     // 5
			{1, connState, []string{}, []string{}},   // 6 SELECT on conn 1, before its step 7: in
			{1, 0, []string{"k"}, []string{}},        // 7 failing
		}, []int{1, 3, 4, 6, 7}, []string{"k"}},
		{"unknown writes join; unknown keys bring every earlier write", []st{
			{1, 0, []string{"a"}, []string{"a"}}, // 1: before the script
			{1, 0, []string{"b"}, []string{}},    // 2: a read
			{1, 0, unknown, unknown},             // 3 EVAL naming no key
			{1, 0, []string{"c"}, []string{"c"}}, // 4: after it, unrelated
			{1, 0, unknown, []string{}},          // 5 DBSIZE: writes nothing
			{1, 0, []string{"k"}, []string{}},    // 6 failing
		}, []int{1, 3, 6}, []string{"a", "k"}},
		{"paths", []st{
			{1, 0, []string{"/items/2"}, []string{"/items/2"}},
			{1, 0, []string{"/itemsx"}, []string{"/itemsx"}},
			{1, 0, []string{"/items/"}, []string{"/items/"}},
			{1, 0, []string{"/items"}, []string{}},
		}, []int{1, 3, 4}, []string{"/items", "/items/", "/items/2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := build(tc.steps)
			got, ev, ok := dependencySlice(k, len(tc.steps), 100)
			if !ok || !slices.Equal(got, tc.want) || !slices.Equal(ev.Keys, tc.keys) || ev.Steps != len(tc.want) || ev.First != tc.want[0] {
				t.Errorf("slice %v keys %v (%+v, ok %v), want %v keys %v", got, ev.Keys, ev, ok, tc.want, tc.keys)
			}
			if _, _, ok := dependencySlice(k, len(tc.steps), len(tc.want)-1); ok {
				t.Errorf("a slice of %d steps accepted with a maximum of %d", len(tc.want), len(tc.want)-1)
			}
		})
	}
}
