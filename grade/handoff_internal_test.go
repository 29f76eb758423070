package grade

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/replay"
)

// splitAt hands a recording over at its failing step: the prefix is the
// steps before it; the suffix is the failing step and what follows, after
// the set-up steps no data file holds, sent again: a connection's (SELECT)
// only on a connection the suffix uses, the server's (SCRIPT LOAD) on any.
// A step that sets nothing (SET) is not sent again, nor the set-up of a
// connection the suffix does not use, and each connection is opened where
// the suffix first uses it.
func TestSplitAtSendsTheSetUpAgain(t *testing.T) {
	var evs []kavach.Event
	at := time.Duration(0)
	add := func(conn uint64, dir kavach.Direction, data string) {
		at += time.Millisecond
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: conn, Dir: dir, Offset: at, Data: []byte(data)})
	}
	req := func(conn uint64, args ...string) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		add(conn, kavach.Request, string(redis.AppendCommand(nil, b...)))
		add(conn, kavach.Response, "+OK\r\n")
	}
	add(1, kavach.Open, "")
	add(2, kavach.Open, "")
	add(3, kavach.Open, "")
	req(1, "SELECT", "1")                                              // 1: conn 1's set-up, the suffix uses conn 1
	req(2, "SCRIPT", "LOAD", "return 1")                               // 2: the server's
	req(3, "SELECT", "2")                                              // 3: conn 3's, which the suffix does not use
	req(1, "SET", "k", "v")                                            // 4: in the data file
	req(1, "GET", "k")                                                 // 5: the hand-off
	req(2, "EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0") // 6
	add(1, kavach.Close, "")
	origin := []int{1, 2, 3, 4, 5, 6}

	sp, err := splitAt(evs, origin, 5, redis.Integration{})
	if err != nil {
		t.Fatal(err)
	}
	prefix, suffix, sufOrigin := sp.prefix, sp.suffix, sp.origin
	if len(sp.moved) != 0 {
		t.Errorf("moved %v, want none: every step before the cut was answered before it", sp.moved)
	}
	if got := requests(prefix); !cmp.Equal(got, []string{"SELECT 1", "SCRIPT LOAD return 1", "SELECT 2", "SET k v"}) {
		t.Errorf("prefix requests %q", got)
	}
	if got := requests(suffix); !cmp.Equal(got, []string{"SELECT 1", "SCRIPT LOAD return 1", "GET k", "EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0"}) {
		t.Errorf("suffix requests %q", got)
	}
	if diff := cmp.Diff([]int{1, 2, 5, 6}, sufOrigin); diff != "" {
		t.Errorf("suffix origins (-want +got):\n%s", diff)
	}
	// Opened where first used, in the suffix's order; conn 1's close kept.
	var shape []string
	for _, ev := range suffix {
		switch ev.Dir {
		case kavach.Open:
			shape = append(shape, "open "+string(rune('0'+ev.Conn)))
		case kavach.Close:
			shape = append(shape, "close "+string(rune('0'+ev.Conn)))
		}
	}
	if !cmp.Equal(shape, []string{"open 1", "open 2", "close 1"}) {
		t.Errorf("suffix opens and closes %q", shape)
	}
	if n := len(kavach.Steps(suffix, redis.Integration{})); n != 4 {
		t.Errorf("the suffix has %d steps, want 4", n)
	}
}

// requests renders the requests of events, arguments joined by spaces.
func requests(evs []kavach.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Dir != kavach.Request {
			continue
		}
		c, err := redis.ParseCommand(ev.Data)
		if err != nil {
			out = append(out, "unparsable")
			continue
		}
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			args[i] = string(a)
		}
		out = append(out, strings.Join(args, " "))
	}
	return out
}

// A connection the cut keeps is opened once, where the cut first uses
// it, and closed where the recording closed it: no second open right
// before its close (which dialed a new connection and left the first one
// open to the end of the replay).
func TestCutSliceOpensOnce(t *testing.T) {
	get := redis.AppendCommand(nil, []byte("GET"), []byte("k"))
	evs := []kavach.Event{
		{Seq: 1, Conn: 1, Dir: kavach.Open},
		{Seq: 2, Conn: 1, Dir: kavach.Request, Data: get},
		{Seq: 3, Conn: 1, Dir: kavach.Response, Data: []byte("$-1\r\n")},
		{Seq: 4, Conn: 1, Dir: kavach.Close},
	}
	w, err := cutSlice(replay.Slice(evs), redis.Integration{}, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	var dirs []kavach.Direction
	for _, ev := range w.events {
		dirs = append(dirs, ev.Dir)
	}
	if want := []kavach.Direction{kavach.Open, kavach.Request, kavach.Response, kavach.Close}; !cmp.Equal(dirs, want) {
		t.Errorf("cut events %v, want %v", dirs, want)
	}
}

// A client blocked across the cut (BLPOP, step 2, answered after LPUSH,
// step 3) is in no data file: splitAt moves its step from the prefix to
// the suffix, in its place before the cut, so that a build started from
// the saved state is sent it again and waits in it again; the connection
// it blocks is then one the suffix uses, so that connection's set-up
// (SELECT, step 1) is sent again too. splice puts the moved step's answer
// back in its place.
func TestSplitAtMovesAClientWaitingAcrossTheCut(t *testing.T) {
	evs := []kavach.Event{
		{Conn: 1, Dir: kavach.Open},
		{Conn: 2, Dir: kavach.Open},
		{Conn: 1, Dir: kavach.Request, Data: cmd("SELECT", "1")},     // 1
		{Conn: 1, Dir: kavach.Response, Data: []byte("+OK\r\n")},     //
		{Conn: 1, Dir: kavach.Request, Data: cmd("BLPOP", "q", "5")}, // 2: waits
		{Conn: 2, Dir: kavach.Request, Data: cmd("SET", "k", "v")},   // 3
		{Conn: 2, Dir: kavach.Response, Data: []byte("+OK\r\n")},
		{Conn: 2, Dir: kavach.Request, Data: cmd("LPUSH", "q", "x")}, // 4: the cut
		{Conn: 2, Dir: kavach.Response, Data: []byte(":1\r\n")},
		{Conn: 1, Dir: kavach.Response, Data: []byte("*2\r\n$1\r\nq\r\n$1\r\nx\r\n")}, // 2's answer
	}
	number(evs)
	sp, err := splitAt(evs, []int{1, 2, 3, 4}, 4, redis.Integration{})
	if err != nil {
		t.Fatal(err)
	}
	if got := requests(sp.prefix); !cmp.Equal(got, []string{"SELECT 1", "SET k v"}) {
		t.Errorf("prefix requests %q, want the blocked BLPOP out of it", got)
	}
	if got := requests(sp.suffix); !cmp.Equal(got, []string{"SELECT 1", "BLPOP q 5", "LPUSH q x"}) {
		t.Errorf("suffix requests %q, want the set-up, the BLPOP sent again, then the cut", got)
	}
	if !cmp.Equal(sp.moved, []int{2}) || !cmp.Equal(sp.steps, []int{1, 2, 4}) {
		t.Errorf("moved %v, suffix steps %v; want [2] and [1 2 4]", sp.moved, sp.steps)
	}
	// The build's answers: 1 and 3 from the prefix's replay, then the
	// suffix's (SELECT again, BLPOP, LPUSH).
	res := func(s string) replay.StepResult { return replay.StepResult{Ran: true, Output: []any{s}} }
	tr := splice(&replay.Trace{Steps: []replay.StepResult{res("select again"), res("blpop"), res("lpush")}},
		[]replay.StepResult{res("select"), res("set")}, sp, 4)
	var got []string
	for i, s := range tr.Steps {
		if s.N != i+1 {
			t.Errorf("spliced step %d numbered %d", i+1, s.N)
		}
		got = append(got, s.Output[0].(string))
	}
	if want := []string{"select", "blpop", "set", "lpush"}; !cmp.Equal(got, want) {
		t.Errorf("spliced answers %q, want %q", got, want)
	}
}

// probeSteps are the reads a checkpoint's check sends again: a step that
// reads keys and writes none (GET), answered before the next step was
// sent; not a write (SET), a step of unknown keys, one naming no key
// (INFO), a state-setting step (SELECT), nor one that waited for its
// answer (BLPOP, answered after LPUSH). withProbes sends the latest distinct ones before the
// checkpoint's step again, once each, on a connection of their own after
// the last event, at its time.
func TestProbesAreTheRecordingsOwnReads(t *testing.T) {
	evs := []kavach.Event{
		{Conn: 1, Dir: kavach.Open},
		{Conn: 1, Dir: kavach.Request, Data: cmd("SELECT", "0")}, // 1: sets state
		{Conn: 1, Dir: kavach.Response, Data: []byte("+OK\r\n")},
		{Conn: 1, Dir: kavach.Request, Data: cmd("SET", "k", "v")}, // 2: writes
		{Conn: 1, Dir: kavach.Response, Data: []byte("+OK\r\n")},
		{Conn: 1, Dir: kavach.Request, Data: cmd("GET", "k")}, // 3: reads
		{Conn: 1, Dir: kavach.Response, Data: []byte("$1\r\nv\r\n")},
		{Conn: 2, Dir: kavach.Open},
		{Conn: 2, Dir: kavach.Request, Data: cmd("BLPOP", "q", "5")},       // 4: waits
		{Conn: 1, Dir: kavach.Request, Data: cmd("EVAL", "return 1", "0")}, // 5: unknown
		{Conn: 1, Dir: kavach.Response, Data: []byte(":1\r\n")},
		{Conn: 1, Dir: kavach.Request, Data: cmd("GET", "k")}, // 6: reads, as step 3
		{Conn: 1, Dir: kavach.Response, Data: []byte("$1\r\nv\r\n")},
		{Conn: 1, Dir: kavach.Request, Data: cmd("INFO")}, // 7: names no key
		{Conn: 1, Dir: kavach.Response, Data: []byte("$2\r\nup\r\n")},
		{Conn: 1, Dir: kavach.Request, Data: cmd("LPUSH", "q", "x")}, // 8
		{Conn: 1, Dir: kavach.Response, Data: []byte(":1\r\n")},
		{Conn: 2, Dir: kavach.Response, Data: []byte("*2\r\n$1\r\nq\r\n$1\r\nx\r\n")},
	}
	number(evs)
	keys := [][]string{{}, {"k"}, {"k"}, {"q"}, nil, {"k"}, {}, {"q"}}
	writes := [][]string{{}, {"k"}, {}, {}, nil, {}, {}, {"q"}}
	c := redis.Integration{}
	reads := probeSteps(evs, keys, writes, c)
	var got []int
	for _, r := range reads {
		got = append(got, r.N)
	}
	if !cmp.Equal(got, []int{3, 6}) {
		t.Fatalf("probe steps %v, want [3 6]: the GETs only", got)
	}
	cps := &checkpoints{base: evs, codec: c, reads: reads}
	out, origin := cps.withProbes(evs, 8)
	if !cmp.Equal(origin, []int{6}) {
		t.Errorf("probes sent again %v, want [6]: GET k once, the latest", origin)
	}
	tail := out[len(evs):]
	if len(tail) != 4 || tail[0].Dir != kavach.Open || tail[0].Conn != 3 || requests(tail)[0] != "GET k" || tail[3].Dir != kavach.Close {
		t.Errorf("events added %+v, want GET k and its answer on a new connection 3, opened and closed", tail)
	}
	for _, ev := range tail {
		if ev.Offset != evs[len(evs)-1].Offset {
			t.Errorf("a probe event at %v, want the last event's time %v", ev.Offset, evs[len(evs)-1].Offset)
		}
	}
	if out, origin := cps.withProbes(evs, 3); len(out) != len(evs) || origin != nil {
		t.Errorf("before step 3, no read came before: %d events added, origin %v", len(out)-len(evs), origin)
	}
}

// cmd is a RESP request of args.
func cmd(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return redis.AppendCommand(nil, b...)
}

// number gives evs their places in order, a millisecond apart.
func number(evs []kavach.Event) {
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
		evs[i].Offset = time.Duration(i) * time.Millisecond
	}
}
