package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// checkSink checks that steps come in order, each reproducing the
// recording, and counts them.
type checkSink struct {
	t        *testing.T
	recorded []replay.StepResult
	n        int
	restarts int
}

func (c *checkSink) Step(s replay.StepResult) error {
	c.n++
	if s.N != c.n {
		c.t.Fatalf("step %d came as the %dth", s.N, c.n)
	}
	if !s.Ran {
		c.t.Errorf("step %d did not run", s.N)
	}
	if d := replay.Compare(c.recorded[s.N-1], s); len(d) > 0 {
		c.t.Errorf("step %d: %v", s.N, d)
	}
	return nil
}

func (c *checkSink) Restart() { c.n = 0; c.restarts++ }

// A long recording is played through a window: the steps come to the sink
// in order as they become final, and the replay never holds more than a
// few of them, however long the recording.
func TestStreamKeepsAWindow(t *testing.T) {
	build := redisbuild.MustBuild(t)
	for _, n := range []int{2000, 20000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var ss []step
			for i := range n / 2 {
				at := time.Duration(i/8) * time.Millisecond // a client pipelining 16 requests a millisecond
				v := fmt.Sprint(i)
				ss = append(ss, step{conn: 1, at: at, args: []string{"SET", "k", v}, replay: "+OK\r\n"},
					step{conn: 1, at: at, args: []string{"GET", "k"}, replay: fmt.Sprintf("$%d\r\n%s\r\n", len(v), v)})
			}
			evs := events(ss...)
			c := redis.Integration{}
			sink := &checkSink{t: t, recorded: replay.Recorded(evs, c)}
			tr, err := replay.Stream(context.Background(), kavach.Launch{Path: build}, replay.Slice(evs), options(redis.Integration{}), sink)
			if err != nil {
				t.Fatal(err)
			}
			if sink.n != n || tr.Stopped != "" || tr.Steps != nil {
				t.Fatalf("%d steps of %d came, stopped %q, trace kept %d steps", sink.n, n, tr.Stopped, len(tr.Steps))
			}
			if tr.Window > 64 { // a pipelined batch (16 steps) and a few
				t.Errorf("the replay held %d steps at once; want a handful, whatever the length", tr.Window)
			}
		})
	}
}

// A step that blocks holds the steps after it back until it is answered;
// they all come, in order, once it is.
func TestStreamHoldsBehindABlockedStep(t *testing.T) {
	build := redisbuild.MustBuild(t)
	ss := []step{{conn: 2, at: 0, args: args("BLPOP jobs 0")}}
	for i := range 500 {
		ss = append(ss, step{conn: 1, at: time.Duration(i+1) * time.Millisecond, args: args("INCR n"), replay: fmt.Sprintf(":%d\r\n", i+1)})
	}
	ss = append(ss, step{conn: 1, at: time.Second, args: args("LPUSH jobs j1"), replay: ":1\r\n"})
	evs := events(ss...)
	evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: 2, Dir: kavach.Response, Offset: time.Second, Data: []byte("*2\r\n$4\r\njobs\r\n$2\r\nj1\r\n")})
	c := redis.Integration{}
	sink := &checkSink{t: t, recorded: replay.Recorded(evs, c)}
	tr, err := replay.Stream(context.Background(), kavach.Launch{Path: build}, replay.Slice(evs), options(redis.Integration{}), sink)
	if err != nil {
		t.Fatal(err)
	}
	if sink.n != 502 || tr.Stopped != "" {
		t.Fatalf("%d steps came of 502, stopped %q", sink.n, tr.Stopped)
	}
	if tr.Window < 500 {
		t.Errorf("window %d: the steps behind the BLPOP should have waited for it", tr.Window)
	}
}
