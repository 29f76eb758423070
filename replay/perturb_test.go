package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// TestPerturbedRunShowsLoadDependentAnswerAsNoise: a key set to expire in
// 500 ms, and DBSIZE 600 ms later, within the same second. DBSIZE counts
// a key whose time is up until Redis's timer (its active expiry) deletes
// it, so its answer depends on whether the timer ran between the clock's
// move and the request: the recording got 1, as a quick client on an idle
// machine does; on a loaded machine the timer runs first and the answer
// is 0. A plain replay does not settle a move within one second and
// answers as recorded (nearly always: the timer ticks every 2 ms); the
// perturbed one settles every move, answers 0, and so the step is listed
// as noise by FindNoise over the runs, as kavach diff and kavach replay
// find it. The DBSIZE in the next second, where every replay settles, is
// no noise.
func TestPerturbedRunShowsLoadDependentAnswerAsNoise(t *testing.T) {
	build := redisbuild.MustBuild(t)
	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	rec := events(
		step{conn: 1, at: 0, args: args("SET k v PX 500"), replay: "+OK\r\n"},
		step{conn: 1, at: 600 * time.Millisecond, args: args("DBSIZE"), replay: ":1\r\n"},
		step{conn: 1, at: 1200 * time.Millisecond, args: args("DBSIZE"), replay: ":0\r\n"},
	)
	run := func(perturb bool) *replay.Trace {
		t.Helper()
		opts := options(tl)
		opts.Perturb = perturb
		tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, opts)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Stopped != "" {
			t.Fatalf("stopped: %s", tr.Stopped)
		}
		return tr
	}
	c := redis.Integration{}
	recorded := replay.Recorded(rec, c)
	plain, perturbed := run(false), run(true)
	t.Logf("plain replay: DBSIZE %s then %s", reply(plain, 2), reply(plain, 3))
	if got := reply(perturbed, 2); got != "(integer) 0" {
		t.Fatalf("perturbed replay: DBSIZE = %s, want 0: the timer ran after the move and expired the key", got)
	}
	noise := replay.FindNoise(recorded, 0, plain, perturbed)
	if !noise.Covers(2, "reply[0]") {
		t.Errorf("step 2 (DBSIZE after an unsettled move) is not noise; noise: %v", noise.List())
	}
	if len(noise[3]) > 0 || len(noise[1]) > 0 {
		t.Errorf("steps 1 and 3 are noise: %v", noise.List())
	}
	if v := replay.Verify(recorded, nil, perturbed, noise); !v.Reproduced {
		t.Errorf("the perturbed run with its noise listed does not reproduce the recording: step %d", v.FirstDifferent)
	}
}
