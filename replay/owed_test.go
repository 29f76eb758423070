package replay

import (
	"slices"
	"testing"

	"github.com/kavach-dev/kavach"
)

// TestOwedInserted: a request a variant inserted has no recorded reply.
// Its client waits for its reply before the connection's next event, and
// the recorded reply that follows belongs to the recorded request: the
// close waits for both replies, not one.
func TestOwedInserted(t *testing.T) {
	ev := func(dir kavach.Direction, flags kavach.EventFlags, data string) kavach.Event {
		return kavach.Event{Conn: 1, Dir: dir, Flags: flags, Data: []byte(data)}
	}
	events := []kavach.Event{
		ev(kavach.Open, 0, ""),
		ev(kavach.Request, kavach.Inserted, "SET kavach:type:string x\r\n"),
		ev(kavach.Request, 0, "STRLEN kavach:type:string\r\n"),
		ev(kavach.Response, 0, ":1\r\n"),
		ev(kavach.Close, 0, "client"),
	}
	o := newOweCounter(nil)
	var got []int
	for _, ev := range events {
		owed, _ := o.add(ev)
		got = append(got, owed)
	}
	if want := []int{0, 0, 1, 2, 2}; !slices.Equal(got, want) {
		t.Errorf("owed = %v, want %v", got, want)
	}
	steps := kavach.Steps(events, nil)
	if len(steps) != 2 || len(steps[0].Responses) != 0 || len(steps[1].Responses) != 1 {
		t.Fatalf("steps: the recorded reply must belong to the recorded request: %+v", steps)
	}
}
