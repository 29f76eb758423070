package textreport

import (
	"bytes"
	"testing"

	"github.com/kavach-dev/kavach/grade"
)

// TestCheckpointsLine: the diff says how many variant replays started
// from checkpoints and before which steps, and why the first checkpoint
// not used was not; nothing when no checkpoint was made.
func TestCheckpointsLine(t *testing.T) {
	var b bytes.Buffer
	printCheckpoints(&b, []grade.CheckpointEvidence{
		{Step: 4899, Build: "old", Variants: 50},
		{Step: 4899, Build: "new", Variants: 37},
		{Step: 4900, Build: "new", Unused: "a build started from the state before step 4900 answered step 4901 otherwise than a replay from the start (at reply[0])\nsecond line"},
	})
	want := "           87 variant replays started from checkpoints before step 4899 (each build's saved state, checked)\n" +
		"           the new build's checkpoint before step 4900 not used: a build started from the state before step 4900 answered step 4901 otherwise than a replay from the start (at reply[0])\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	b.Reset()
	printCheckpoints(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no checkpoints: %q, want nothing", b.String())
	}
}
