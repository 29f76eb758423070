package replay_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/loadtest"
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
	var r recording
	add, request := r.add, r.request
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
	rec := r.sorted()

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

// TestSettledSecondsUnderLoad: every move into another second is seen by
// Redis's timer before the next request, while stress-ng saturates the
// cores, also right after a connection is opened (its accept is a turn
// of the build's loop that its timer did not run: counting it as the
// timer's turn leaves the LRU clock a second behind). Each second a new
// connection asks OBJECT IDLETIME of a key set a second before (1, unless
// a move was not settled: 0 when this one was not, 2 when the last one
// was not), then sets it again. Plain and perturbed replays alike.
func TestSettledSecondsUnderLoad(t *testing.T) {
	build := redisbuild.MustBuild(t)
	ms := time.Millisecond
	var r recording
	add, request := r.add, func(conn uint64, at time.Duration, cmd, reply string) { r.request(conn, at, cmd, at, reply) }
	add(1, kavach.Open, 0, nil)
	request(1, 100*ms, "SET k v", "+OK\r\n")
	const rounds = 150
	for i := 1; i <= rounds; i++ {
		at := time.Duration(i)*time.Second + 100*ms
		conn := uint64(i + 1)
		add(conn, kavach.Open, at, nil)
		request(conn, at, "OBJECT IDLETIME k", ":1\r\n")
		request(conn, at+ms, "SET k v", "+OK\r\n")
		add(conn, kavach.Close, at+2*ms, []byte("client"))
	}
	rec := r.sorted()
	defer loadtest.Stress(t)()

	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)

	// The first move after the build started, into another second: what
	// the launcher did to see it ready (a connection, closed) and the
	// replay's first connection may still be on their way to it.
	var f recording
	f.add(1, kavach.Open, 900*ms, nil)
	f.request(1, 1100*ms, "SET k v", 1100*ms, "+OK\r\n")
	f.request(1, 2100*ms, "OBJECT IDLETIME k", 2100*ms, ":1\r\n")
	first := f.sorted()
	// Four at a time, as a diff runs its replays.
	var wg sync.WaitGroup
	for run := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := options(tl)
			opts.Perturb = run%2 == 1
			tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, first, opts)
			if err != nil {
				t.Error(err)
				return
			}
			if got := reply(tr, 2); got != "(integer) 1" {
				t.Errorf("run %d (perturbed %v): the idle time of a key set in the first second = %s, want 1", run+1, opts.Perturb, got)
			}
		}()
		if run%4 == 3 {
			wg.Wait()
		}
	}
	wg.Wait()

	for run := range 4 {
		opts := options(tl)
		opts.Perturb = run%2 == 1
		tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, opts)
		if err != nil {
			t.Fatal(err)
		}
		for n := 2; n < len(tr.Steps); n += 2 {
			if got := reply(tr, n); got != "(integer) 1" {
				t.Errorf("run %d (perturbed %v): step %d, the idle time of a key set a second before = %s, want 1", run+1, opts.Perturb, n, got)
			}
		}
	}
}

// recording builds a RESP recording event by event.
type recording struct{ events []kavach.Event }

func (r *recording) add(conn uint64, dir kavach.Direction, at time.Duration, data []byte) {
	r.events = append(r.events, kavach.Event{Conn: conn, Dir: dir, Offset: at, Data: data})
}

// request adds a request sent at at and its reply, come at replyAt.
func (r *recording) request(conn uint64, at time.Duration, cmd string, replyAt time.Duration, reply string) {
	b := [][]byte{}
	for _, a := range args(cmd) {
		b = append(b, []byte(a))
	}
	r.add(conn, kavach.Request, at, redis.AppendCommand(nil, b...))
	r.add(conn, kavach.Response, replyAt, []byte(reply))
}

// sorted is the recording in time order, numbered.
func (r *recording) sorted() []kavach.Event {
	rec := slices.Clone(r.events)
	slices.SortStableFunc(rec, func(a, b kavach.Event) int { return int(a.Offset - b.Offset) })
	for i := range rec {
		rec[i].Seq = uint64(i + 1)
	}
	return rec
}
