package variants

import (
	"fmt"
	"testing"

	"github.com/kavach-dev/kavach"
)

// Which decimal numbers a binary fraction holds exactly: the read-back
// variants put the others first.
func TestBinaryHolds(t *testing.T) {
	for v, want := range map[string]bool{
		"2.5": true, "2.50": true, "25e-1": true, "1e3": true, "-0": true, "-0.0": true, "1e300": true, "1e400": true,
		"0.1": false, "-0.1": false, "2.51": false, "1e-3": false, "5e-324": false, "12.5e-1": true, "0.125": true,
		"+0.3": false, "1e-99999999999999": false, "1e-99999999999999999999": true, "nan": true, "": true, "e": true, ".": true,
		"1." + string(make([]byte, 80)): true,
	} {
		if got := binaryHolds(v); got != want {
			t.Errorf("binaryHolds(%q) = %v, want %v", v, got, want)
		}
	}
}

// A path's ancestors are the keys it relates to as a path below them.
func TestAncestors(t *testing.T) {
	for key, want := range map[string][]string{
		"/items/2": {"/", "/items", "/items/"},
		"/items/":  {"/", "/items"},
		"/":        nil,
		"counter":  nil,
		"a/b":      nil,
		"/a//b":    {"/", "/a", "/a/", "/a/", "/a//"},
	} {
		got := ancestors(key)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ancestors(%q) = %q, want %q", key, got, want)
		}
		for _, a := range got {
			if !kavach.KeysRelate(a, key) {
				t.Errorf("%q is no ancestor of %q by KeysRelate", a, key)
			}
		}
	}
}
