package grade

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// TestCheckpointAcrossABlockedClient: in the GETRANGE example a worker
// is blocked in BLPOP (step 4) when LPUSH (step 5) wakes it. A data file
// holds no blocked client, so the checkpoint before step 5 is saved
// without step 4, and a build started from it is sent BLPOP again before
// LPUSH: it waits again, and LPUSH wakes it. That checkpoint passes its
// check and is used; the recording replayed from it answers every step
// as a replay from the start does, BLPOP with what LPUSH pushed. (Before
// the wait was sent again, BLPOP timed out in the checkpoint's own replay
// and the check refused the checkpoint: step 4 answered otherwise.)
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
	ropts := replay.Options{Integration: c, Start: fx.Header.Start}
	cps := &checkpoints{base: fx.Events, origin: origin, codec: c, ropts: ropts, at: map[checkpointKey]*checkpoint{}}
	defer cps.close()
	ctx := context.Background()
	cp := cps.get(ctx, "old", old, 5)
	if cp.seed == nil {
		t.Fatalf("the checkpoint before step 5, a client blocked across it: not used: %s", cp.why)
	}
	if got := requests(cp.prefix); len(got) != 3 || slices.ContainsFunc(got, func(r string) bool { return strings.HasPrefix(r, "BLPOP") }) {
		t.Errorf("the checkpoint's steps %q, want steps 1 to 3, the waiting BLPOP not among them", got)
	}
	whole, err := runRetry(ctx, old, fx.Events, ropts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cps.run(ctx, "old", 5, old, fx.Events, ropts)
	if err != nil {
		t.Fatal(err)
	}
	if why := differs(whole, got, func(n int) string { return fmt.Sprint("step ", n) }); why != "" {
		t.Errorf("replayed from the checkpoint before step 5, the recording %s", why)
	}
	if s := got.Steps[3]; s.N != 4 || !s.Ran || !strings.Contains(fmt.Sprint(s.Output), "greeting") {
		t.Errorf("step 4 from the checkpoint: %+v, want BLPOP woken with greeting", s)
	}

	// A variant of step 5 that pushes to another list: BLPOP, waiting
	// again on the build started from the checkpoint, times out there as
	// in a replay from the start (nil, five seconds of the virtual clock
	// after it was sent, at the same virtual time).
	other := slices.Clone(fx.Events)
	for i, ev := range other {
		if ev.Dir == kavach.Request && bytes.Contains(ev.Data, []byte("LPUSH")) {
			other[i].Data = bytes.Replace(ev.Data, []byte("$4\r\njobs"), []byte("$4\r\nelse"), 1)
		}
		if ev.Dir == kavach.Request { // and no crash at step 7, so that the wait can end
			other[i].Data = bytes.Replace(other[i].Data, []byte("$4\r\n-100\r\n"), []byte("$1\r\n0\r\n"), 1)
		}
	}
	whole, err = runRetry(ctx, old, other, ropts)
	if err != nil {
		t.Fatal(err)
	}
	got, err = cps.run(ctx, "old", 5, old, other, ropts)
	if err != nil {
		t.Fatal(err)
	}
	if why := differs(whole, got, func(n int) string { return fmt.Sprint("step ", n) }); why != "" {
		t.Errorf("the variant pushing elsewhere, replayed from the checkpoint before step 5, %s", why)
	}
	if s := got.Steps[3]; s.N != 4 || len(s.Responses) != 1 || string(s.Responses[0]) != "*-1\r\n" ||
		!s.Answered.Equal(whole.Steps[3].Answered) || s.Answered.Sub(s.Virtual) < 5*time.Second {
		t.Errorf("step 4 of the variant from the checkpoint: sent %v, answered %q at %v (from the start: %v); want nil, five seconds after it was sent, as from the start",
			s.Virtual, s.Responses, s.Answered, whole.Steps[3].Answered)
	}
	if ev := cps.evidence(); len(ev) != 1 || ev[0].Step != 5 || ev[0].Unused != "" || ev[0].Variants != 2 {
		t.Errorf("evidence %+v, want the checkpoint before step 5 used twice", ev)
	}

}
