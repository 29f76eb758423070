package main

import (
	"runtime/debug"
	"testing"

	"github.com/kavach-dev/kavach"
)

// TestBuildVersion: the version is the module's as the go command stamped
// it, else kavach.Version.
func TestBuildVersion(t *testing.T) {
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.4.2"}}, true, "1.4.2"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201150000-abcdef012345+dirty"}}, true, "0.0.0-20261201150000-abcdef012345+dirty"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, kavach.Version},
		{&debug.BuildInfo{}, true, kavach.Version},
		{nil, false, kavach.Version},
	} {
		if got := buildVersion(tc.bi, tc.ok); got != tc.want {
			t.Errorf("buildVersion(%+v): %q, want %q", tc.bi, got, tc.want)
		}
	}
}
