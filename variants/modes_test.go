package variants_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/variants"
)

// onConns is a recording of commands, each sent on the connection
// before it ("1", "2", ...), answered +OK; with each step's keys (the
// second argument).
func onConns(steps ...[]string) ([]kavach.Event, [][]string) {
	var evs []kavach.Event
	opened := map[uint64]bool{}
	var keys [][]string
	for i, s := range steps {
		conn := uint64(s[0][0] - '0')
		if !opened[conn] {
			opened[conn] = true
			evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: conn, Dir: kavach.Open})
		}
		b := make([][]byte, len(s)-1)
		for j, a := range s[1:] {
			b[j] = []byte(a)
		}
		at := time.Duration(i+1) * time.Millisecond
		evs = append(evs, kavach.Event{Seq: uint64(len(evs) + 1), Conn: conn, Dir: kavach.Request, Offset: at, Data: redis.AppendCommand(nil, b...)},
			kavach.Event{Seq: uint64(len(evs) + 2), Conn: conn, Dir: kavach.Response, Offset: at, Data: []byte("+OK\r\n")})
		k := []string{}
		if len(s) > 2 && s[1] != "HELLO" {
			k = []string{s[2]}
		}
		keys = append(keys, k)
	}
	return evs, keys
}

// Connection modes go to the failing request and to the writers of its
// key, each turned the other way from where its connection is; the
// regression form turns a cause's connection from its first request.
func TestModes(t *testing.T) {
	evs, keys := onConns(
		[]string{"1", "HELLO", "3"},                  // 1: conn 1 speaks RESP3
		[]string{"1", "ZADD", "board", "1", "a"},     // 2: writer, conn 1
		[]string{"2", "ZADD", "board", "2", "b"},     // 3: writer, conn 2
		[]string{"2", "SET", "other", "x"},           // 4: another key
		[]string{"3", "ZINCRBY", "board", "-5", "a"}, // 5: fails, conn 3
	)
	keys[0] = []string{}
	learned := &redis.Learned{Keys: map[string]redis.KeyRange{"ZADD": {First: 1, Last: 1, Step: 1}, "ZINCRBY": {First: 1, Last: 1, Step: 1}, "SET": {First: 1, Last: 1, Step: 1}}}
	o := variants.Options{Codec: redis.Integration{}, Variator: redis.Integration{}.Abilities().Variation, Schema: learned, Budget: 1000, Seed: 1, Keys: keys}
	vs := variants.Generate(evs, 5, o)
	var got []string
	for _, v := range vs {
		if v.Kind != "mode" {
			continue
		}
		got = append(got, v.Description)
		events, origin := v.Build()
		steps := kavach.Steps(events, redis.Integration{})
		// The mode request sits right before the step it changes, on its
		// connection, an inserted request with no origin.
		i := slices.Index(origin, 0)
		if i < 0 || steps[i].Request.Flags&kavach.Inserted == 0 || i+1 >= len(steps) || steps[i].Conn() != steps[i+1].Conn() {
			t.Errorf("%s: origin %v: want an inserted mode request before the step, on its connection", v.Description, origin)
			continue
		}
		mode := (redis.Integration{}).DescribeRequest(steps[i].Request.Data, 0)
		switch {
		case v.Regression && len(steps) != 5:
			t.Errorf("%s: %d steps, want the recording cut before the failing step (4 and the mode)", v.Description, len(steps))
		case !v.Regression && len(steps) != 6:
			t.Errorf("%s: %d steps, want the whole recording and the mode", v.Description, len(steps))
		case !strings.Contains(v.Description, mode[:strings.Index(mode, " ")]):
			t.Errorf("%s: inserted %s", v.Description, mode)
		}
	}
	want := []string{
		"step 5: on a connection in another mode: RESP3 (HELLO 3); the connection spoke RESP2",
		"step 2 (writes the failing request's key): on a connection in another mode: RESP2 (HELLO 2); the connection spoke RESP3",
		"step 3 (writes the failing request's key): on a connection in another mode: RESP3 (HELLO 3); the connection spoke RESP2",
		"regression: step 1: its connection in another mode from its first request: RESP3 (HELLO 3); the connection spoke RESP2",
		"regression: step 3: its connection in another mode from its first request: RESP3 (HELLO 3); the connection spoke RESP2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mode variants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A build with CLIENT NO-TOUCH gets it too, for the requests on keys
	// (not the regression variant before HELLO 3); excluded, none is
	// made.
	learned.Keys["CLIENT|NO-TOUCH"] = redis.KeyRange{}
	n := 0
	for _, v := range variants.Generate(evs, 5, o) {
		if v.Kind == "mode" && strings.Contains(v.Description, "CLIENT NO-TOUCH ON") {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d variants turn CLIENT NO-TOUCH on, want 4 (as many as HELLO, but before HELLO 3)", n)
	}
	o.Exclude = []string{"mode"}
	for _, v := range variants.Generate(evs, 5, o) {
		if v.Kind == "mode" {
			t.Errorf("excluded, made: %s", v.Description)
		}
	}
}
