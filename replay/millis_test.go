package replay_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// TestDistinctMillisecondsAnswerAsRecorded: traffic with a millisecond of
// its own per request, where most clock moves are carried by the next
// request without waiting for the build (docs/replay.md, "What a move
// costs"), still answers as recorded at millisecond precision: a key
// expiring between two steps, TIME, PTTL counting down. And the moves the
// build can observe otherwise are still paid for: one into another second
// (Redis's LRU clock is refreshed only in its timer, so OBJECT IDLETIME
// right after the move reads the old second unless the timer ran on the
// new time first), and every move while a request is blocked (its timeout
// fires as recorded, before a later LPUSH that would otherwise feed it).
func TestDistinctMillisecondsAnswerAsRecorded(t *testing.T) {
	build := redisbuild.MustBuild(t)
	ms := time.Millisecond
	unix := strconv.FormatInt(start.Unix(), 10)
	var rec []kavach.Event
	add := func(conn uint64, dir kavach.Direction, at time.Duration, data []byte) {
		rec = append(rec, kavach.Event{Conn: conn, Dir: dir, Offset: at, Data: data})
	}
	request := func(conn uint64, at time.Duration, cmd string, replyAt time.Duration, reply string) {
		b := [][]byte{}
		for _, a := range args(cmd) {
			b = append(b, []byte(a))
		}
		add(conn, kavach.Request, at, redis.AppendCommand(nil, b...))
		add(conn, kavach.Response, replyAt, []byte(reply))
	}
	add(1, kavach.Open, 0, nil)
	request(1, 0, "SET k v PX 3", 0, "+OK\r\n")                               // 1
	request(1, 1*ms, "PTTL k", 1*ms, ":2\r\n")                                // 2
	request(1, 2*ms, "PTTL k", 2*ms, ":1\r\n")                                // 3
	request(1, 3*ms, "GET k", 3*ms, "$1\r\nv\r\n")                            // 4: expires when the clock is past 3 ms
	request(1, 4*ms, "GET k", 4*ms, "$-1\r\n")                                // 5: gone, lazily, on the time the GET ran
	request(1, 5*ms, "TIME", 5*ms, "*2\r\n$10\r\n"+unix+"\r\n$4\r\n5500\r\n") // 6
	request(1, 990*ms, "SET b hello", 990*ms, "+OK\r\n")                      // 7
	request(1, 999*ms, "OBJECT IDLETIME b", 999*ms, ":0\r\n")                 // 8
	request(1, 1000*ms, "OBJECT IDLETIME b", 1000*ms, ":1\r\n")               // 9: a move into another second is settled
	// A blocked request with a timeout of 10 ms while the other client
	// goes on a millisecond at a time, then pauses: it times out at
	// 1013 ms (Redis fires a timeout once the clock is past it), before
	// the LPUSH recorded right after in the same millisecond, which
	// therefore stays in the list. Both waits of a move while it is
	// blocked count: were the clock moved on before the build took the
	// BLPOP in, its timeout would count from 1003 ms and fire after the
	// LPUSH; and nothing but the build's own timer wakes it between 1010
	// and 1013 ms, so unless the move to 1013 ms waits for a turn of its
	// loop, the LPUSH may come first and feed the BLPOP.
	add(2, kavach.Open, 1002*ms, nil)
	request(2, 1002*ms, "BLPOP q 0.01", 1013*ms, "*-1\r\n") // 10
	for i := 1; i <= 8; i++ {
		request(1, time.Duration(1002+i)*ms, "INCR n", time.Duration(1002+i)*ms, ":"+strconv.Itoa(i)+"\r\n") // 11..18
	}
	request(1, 1013*ms, "LPUSH q x", 1013*ms, ":1\r\n") // 19
	request(1, 1014*ms, "LLEN q", 1014*ms, ":1\r\n")    // 20
	slices.SortStableFunc(rec, func(a, b kavach.Event) int { return int(a.Offset - b.Offset) })
	for i := range rec {
		rec[i].Seq = uint64(i + 1)
	}

	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	recorded := replay.Recorded(rec, redis.Integration{})
	for _, perturb := range []bool{false, true} {
		opts := options(tl)
		opts.Perturb = perturb
		tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, opts)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Clock != "virtual" || tr.Stopped != "" {
			t.Fatalf("perturbed %v: clock %q, stopped %q", perturb, tr.Clock, tr.Stopped)
		}
		if len(tr.Steps) != len(recorded) {
			t.Fatalf("perturbed %v: %d steps, want %d", perturb, len(tr.Steps), len(recorded))
		}
		for n, want := range map[int]string{
			4:  `"v"`,
			5:  "(nil)",
			8:  "(integer) 0",
			9:  "(integer) 1",
			10: "(nil)",
			20: "(integer) 1",
		} {
			if got := reply(tr, n); got != want {
				t.Errorf("perturbed %v: step %d = %s, want %s", perturb, n, got, want)
			}
		}
		// TIME: the 5th millisecond (microseconds 5499 or 5500: the clock
		// file holds the middle of the millisecond, docs/replay.md).
		if got := reply(tr, 6); got != `1) "`+unix+`" 2) "5499"` && got != `1) "`+unix+`" 2) "5500"` {
			t.Errorf("perturbed %v: step 6 = %s, want the 5th millisecond", perturb, got)
		}
		for n := range recorded {
			if d := replay.Compare(recorded[n], tr.Steps[n]); len(d) > 0 {
				t.Errorf("perturbed %v: step %d differs from the recording: %v", perturb, n+1, d)
			}
		}
	}
}
