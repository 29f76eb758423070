package grading_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// orderFixture writes the recording of a GET k that the service ran
// before another client's SET k 2, which the recorder could not tell:
// step 1 GET k (nothing), step 2 the other client's SET (Foreign,
// Unordered), step 3 GET k, recorded as nothing too. With unknown, the
// state lists steps 1 and 3 as of an order not known.
func orderFixture(t *testing.T, unknown []int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "order.kavach")
	w, err := fixtures.Create(path, fixtures.Header{Protocol: redis.Protocol, Upstream: "127.0.0.1:6379", Start: time.Now(), State: fixtures.StateSnapshot})
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(args ...string) []byte {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return redis.AppendCommand(nil, b...)
	}
	nothing := []byte("$-1\r\n")
	for _, ev := range []kavach.Event{
		{Conn: 1, Dir: kavach.Open},
		{Conn: 1, Dir: kavach.Request, Data: cmd("GET", "k")},
		{Conn: 1, Dir: kavach.Response, Data: nothing},
		{Conn: 2, Dir: kavach.Open},
		{Conn: 2, Dir: kavach.Request, Flags: kavach.Foreign | kavach.Unordered, Data: cmd("SET", "k", "2")},
		{Conn: 1, Dir: kavach.Request, Data: cmd("GET", "k")},
		{Conn: 1, Dir: kavach.Response, Data: nothing},
		{Conn: 1, Dir: kavach.Close, Data: []byte("client")},
	} {
		ev.Offset = time.Duration(ev.Conn) * time.Millisecond
		if _, err := w.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	st := fixtures.State{Mode: fixtures.StateSnapshot, Foreign: 1, Unordered: 1, OrderUnknown: unknown, Databases: map[int]int{}}
	if err := w.Write(fixtures.Record{Kind: fixtures.KindState, State: &st}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(fixtures.End{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplayOfAnOrderNotKnown: kavach replay of a fixture whose other
// client's write crossed a proxied read of its key: the build runs the
// write before the read, the read differs from the recording, and the
// replay says it is an order the recording could not know, not just a
// difference. Planted: the same fixture without the steps listed says
// nothing of the order (and takes the difference for noise).
func TestReplayOfAnOrderNotKnown(t *testing.T) {
	for _, tc := range []struct {
		unknown []int
		order   bool
	}{{[]int{1, 3}, true}, {nil, false}} {
		r := grading.ReplayRequest{Build: "/usr/bin/redis-server", Fixture: orderFixture(t, tc.unknown), Runs: 1,
			StepTimeout: 5 * time.Second, StartTimeout: 10 * time.Second}
		res, err := grading.Replay(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		var out bytes.Buffer
		if err := res.Print(&out); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		if !strings.Contains(text, "\n2     foreign") {
			t.Errorf("order not known %v: want step 2 foreign:\n%s", tc.unknown, text)
		}
		// Without the list, the difference every replay agrees on is taken
		// for noise (as for a recording made with --no-watch).
		if want := "result    not reproduced, from step 3"; tc.order && (res.Reproduced() || !strings.Contains(text, want)) {
			t.Errorf("order not known %v: want %q:\n%s", tc.unknown, want, text)
		}
		if !tc.order && (!res.Reproduced() || !strings.Contains(text, `want null, got "2" (noise)`)) {
			t.Errorf("no order listed: want the difference taken for noise:\n%s", text)
		}
		if got := strings.Contains(text, "\norder     step 3"); got != tc.order {
			t.Errorf("order not known %v: an order line %v, want %v:\n%s", tc.unknown, got, tc.order, text)
		}
	}
}
