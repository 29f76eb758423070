package grade_test

import (
	"testing"

	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// A reply path mended for one protocol only: the old build refuses to
// reply a negative double in RESP2 and RESP3 alike; the wrong fix mends
// the RESP2 reply (the incident's client's), the correct one both. Every
// variant of the incident on its RESP2 connection passes the wrong fix;
// only the failing request on a connection turned to RESP3 (mode) sees
// it, at the default budget. The correct fix stays fixed.
func TestModesCatchAFixForOneProtocol(t *testing.T) {
	t.Parallel()
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ModesOld)...)
	fixed := redisbuild.MustBuild(t)
	wrong := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.ModesResp2Only)...)
	fx := recordScript(t, old, incidents.RecordNegativeScore)
	if want := "error:ERR planted: negative double reply"; fx.Failure.Signature != want {
		t.Fatalf("recorded %q, want %q", fx.Failure.Signature, want)
	}
	checkWritersCaughtBy(t, fx, old, fixed, wrong, 64, "mode")
}
