package grade

import (
	"context"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// askAgain finds, on a real build, where the old build answers a
// variant otherwise than its first replay did: SPOP leaves either member
// of two (its own reply is normalized as random; what it left is not),
// so SISMEMBER's answer varies between processes, and SADD's never does.
func TestAskAgainFindsTheOldBuildsNoise(t *testing.T) {
	t.Parallel()
	build := kavach.Launch{Path: redisbuild.MustBuild(t)}
	var events []kavach.Event
	for i, args := range [][]string{{"SADD", "s", "a", "b"}, {"SPOP", "s"}, {"SISMEMBER", "s", "a"}} {
		b := make([][]byte, len(args))
		for j, a := range args {
			b[j] = []byte(a)
		}
		if i == 0 {
			events = append(events, kavach.Event{Seq: 1, Conn: 1, Dir: kavach.Open})
		}
		events = append(events, kavach.Event{Seq: uint64(len(events) + 1), Conn: 1, Dir: kavach.Request, Offset: time.Duration(i) * time.Millisecond, Data: redis.AppendCommand(nil, b...)})
	}
	ropts := replay.Options{Integration: redis.Integration{}, StepTimeout: 5 * time.Second, Start: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	first, err := runRetry(context.Background(), build, events, ropts)
	if err != nil {
		t.Fatal(err)
	}
	noisy := map[int][]string{}
	// 20 more: all as the first, one time in a million.
	if err := askAgain(context.Background(), build, events, ropts, first, 20, noisy); err != nil {
		t.Fatal(err)
	}
	if len(noisy[1]) != 0 || len(noisy[2]) != 0 {
		t.Errorf("SADD or SPOP noisy: %v (SADD answers alike; SPOP's member is normalized)", noisy)
	}
	if len(noisy[3]) == 0 {
		t.Errorf("SISMEMBER after SPOP: no noise in 21 replays of the old build: %v", noisy)
	}
}
