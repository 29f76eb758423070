package grade

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// TestCheckpointAcrossABlockedClient: in the GETRANGE example a worker
// is blocked in BLPOP (step 4) when LPUSH (step 5) wakes it. A data file
// holds no blocked client, so a build started from a checkpoint before
// step 5 would answer step 4 otherwise: that checkpoint fails its check
// and is not used, and the evidence says why. One before step 4, where
// nobody waits yet, is used.
func TestCheckpointAcrossABlockedClient(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "examples", "redis-getrange-crash")
	old := kavach.Launch{Path: redisbuild.MustBuild(t, filepath.Join(dir, "bug.patch"))}
	fx, err := fixtures.Load(filepath.Join(dir, "fixture.kavach"))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.Integration{}
	steps := len(kavach.Steps(fx.Events, c))
	origin := make([]int, steps)
	for i := range origin {
		origin[i] = i + 1
	}
	cps := &checkpoints{base: fx.Events, origin: origin, codec: c, ropts: replay.Options{Integration: c, Start: fx.Header.Start}, at: map[checkpointKey]*checkpoint{}}
	defer cps.close()
	ctx := context.Background()
	if cp := cps.get(ctx, "old", old, 5); cp.seed != nil || !strings.Contains(cp.why, "answered step 4 otherwise") {
		t.Errorf("the checkpoint before step 5, a client blocked across it: used %v, why %q; want not used, step 4 answered otherwise", cp.seed != nil, cp.why)
	}
	if cp := cps.get(ctx, "old", old, 4); cp.seed == nil {
		t.Errorf("the checkpoint before step 4: not used: %s", cp.why)
	}
	ev := cps.evidence()
	if len(ev) != 2 || ev[0].Step != 4 || ev[0].Unused != "" || ev[1].Step != 5 || ev[1].Unused == "" {
		t.Errorf("evidence %+v, want step 4 usable and step 5 not, with why", ev)
	}
}
