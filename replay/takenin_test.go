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

// A request that blocks (no reply yet) reaches the build before the next
// request, on another connection, in the same millisecond: Redis's suite,
// "client unblock tests", sends BLPOP on one connection and, a moment
// later, CLIENT UNBLOCK on another; run first, the unblock finds nobody
// blocked (0), the BLPOP blocks for good and the round after it hangs.
// Each round here (a PING on the unblocking connection first, as the
// suite's INFO) is one chance for the build to read the unblock first;
// sent at once, 1,000 rounds were not reproduced in 5 runs of 5, idle.
// The replay waits for the build to take the BLPOP in (idle, nothing
// unread) before it sends the unblock (runner.takenIn).
func TestBlockedRequestTakenInFirst(t *testing.T) {
	build := redisbuild.MustBuild(t)
	var rec []kavach.Event
	ev, cmd := eventLog(&rec), command
	ev(1, kavach.Open, 0, "")
	ev(2, kavach.Open, 0, "")
	ev(1, kavach.Request, 0, cmd("CLIENT", "ID"))
	ev(1, kavach.Response, 0, ":7\r\n")
	const rounds = 1000
	for i := range rounds {
		at := time.Duration(i+1) * time.Millisecond
		ev(2, kavach.Request, at, cmd("PING"))
		ev(2, kavach.Response, at, "+PONG\r\n")
		ev(1, kavach.Request, at, cmd("BLPOP", "l", "0"))
		ev(2, kavach.Request, at, cmd("CLIENT", "UNBLOCK", "7", "ERROR"))
		ev(2, kavach.Response, at, ":1\r\n")
		ev(1, kavach.Response, at, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")
	}
	tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, options(redis.Integration{}))
	if err != nil {
		t.Fatal(err)
	}
	v := replay.Verify(replay.Recorded(rec, redis.Integration{}), nil, tr, replay.Noise{})
	if !v.Reproduced {
		for _, s := range v.Steps {
			if len(s.Diffs) > 0 || s.Outcome != s.Recorded {
				t.Errorf("first step that differs: %+v", s)
				break
			}
		}
		t.Fatal("not reproduced: a CLIENT UNBLOCK reached the build before the BLPOP sent before it")
	}
}
