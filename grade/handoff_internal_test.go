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

	prefix, suffix, sufOrigin, err := splitAt(evs, origin, 5, redis.Integration{})
	if err != nil {
		t.Fatal(err)
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
