package grading

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// writePings writes a fixture of n PING steps on one connection, with a
// failure marked at its last step.
func writePings(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pings.kavach")
	w, err := fixtures.Create(path, fixtures.Header{Protocol: redis.Protocol, Start: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	evs := []kavach.Event{{Conn: 1, Dir: kavach.Open}}
	for i := 0; i < n; i++ {
		evs = append(evs, kavach.Event{Conn: 1, Dir: kavach.Request, Data: []byte("*1\r\n$4\r\nPING\r\n")},
			kavach.Event{Conn: 1, Dir: kavach.Response, Data: []byte("+PONG\r\n")})
	}
	if _, err := w.Events(evs); err != nil {
		t.Fatal(err)
	}
	if err := w.Failure(kavach.Failure{Step: n, Oracle: kavach.Oracle{Kind: kavach.Error}, Signature: "error"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(fixtures.End{Reason: "client closed"}); err != nil {
		t.Fatal(err)
	}
	return path
}

// An Opened fixture knows whether it is long, and gives its steps either way
// in order; a caller never looks at whether events are in memory. A short
// one is read in one open, with its events; a long one (more than
// grade.DefaultLongSteps steps) is read only until it is known to be
// long, then summarized (a second open) and streamed, its events never
// held.
func TestRecordingShortAndLong(t *testing.T) {
	for _, tc := range []struct {
		steps int
		long  bool
		opens int64
	}{
		{3, false, 1},
		{grade.DefaultLongSteps, false, 1},
		{grade.DefaultLongSteps + 1, true, 2},
	} {
		path := writePings(t, tc.steps)
		before := fixtures.Opens(path)
		rec, err := Open(path, ToGrade)
		if err != nil {
			t.Fatal(err)
		}
		if got := fixtures.Opens(path) - before; got != tc.opens {
			t.Errorf("%d steps: opened %d times, want %d", tc.steps, got, tc.opens)
		}
		if rec.Long() != tc.long || rec.Len() != tc.steps {
			t.Errorf("%d steps: long %v, Len %d; want long %v", tc.steps, rec.Long(), rec.Len(), tc.long)
		}
		if f := rec.Failure(); f == nil || f.Step != tc.steps {
			t.Errorf("%d steps: failure %+v", tc.steps, f)
		}
		if tc.long && rec.Events() != nil {
			t.Errorf("%d steps: a long recording holds its events", tc.steps)
		}
		n := 0
		if err := rec.EachStep(func(s kavach.Step) error {
			n++
			if s.N != n || len(s.Responses) != 1 {
				t.Fatalf("%d steps: step %d given as %d with %d replies", tc.steps, n, s.N, len(s.Responses))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != tc.steps {
			t.Errorf("%d steps: EachStep gave %d", tc.steps, n)
		}
		if rec.Records().Events != nil {
			t.Errorf("%d steps: Records holds events", tc.steps)
		}
	}
}

// A fixture of a protocol no integration speaks is refused as it is
// opened, naming the protocols Kavach speaks.
func TestOpenUnknownProtocol(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gopher.kavach")
	w, err := fixtures.Create(path, fixtures.Header{Protocol: "gopher"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(fixtures.End{}); err != nil {
		t.Fatal(err)
	}
	for _, how := range []Reading{ToGrade, ToReplay, ToVary, ToCheck} {
		_, err = Open(path, how)
		if err == nil || err.Error() != `fixture `+path+`: protocol "gopher": Kavach speaks http, resp` {
			t.Errorf("Open(%d): %v", how, err)
		}
	}
	// Shown and marked as recorded: bytes, no integration.
	for _, how := range []Reading{ToShow, ToMark} {
		if rec, err := Open(path, how); err != nil || rec.Codec() != nil {
			t.Errorf("Open(%d): %v", how, err)
		}
	}
}

// Each verb reads as much of a fixture as it needs: a check its header
// alone, a replay and a view a stream whatever the length, the variants
// and a mark the whole, however long.
func TestOpenReadsWhatEachVerbNeeds(t *testing.T) {
	long := writePings(t, grade.DefaultLongSteps+1)
	for _, tc := range []struct {
		how       Reading
		long      bool
		steps     int
		withSteps bool
	}{
		{ToGrade, true, grade.DefaultLongSteps + 1, false},
		{ToReplay, true, grade.DefaultLongSteps + 1, false},
		{ToShow, true, grade.DefaultLongSteps + 1, false},
		{ToVary, false, grade.DefaultLongSteps + 1, true},
		{ToMark, false, grade.DefaultLongSteps + 1, true},
		{ToCheck, false, 0, false},
	} {
		rec, err := Open(long, tc.how)
		if err != nil {
			t.Fatalf("Open(%d): %v", tc.how, err)
		}
		if rec.Long() != tc.long || rec.Len() != tc.steps || (len(rec.Steps()) > 0) != tc.withSteps {
			t.Errorf("Open(%d): long %v, %d steps, %d grouped; want long %v, %d steps", tc.how, rec.Long(), rec.Len(), len(rec.Steps()), tc.long, tc.steps)
		}
	}
	if _, err := Open(long, ToCheck+1); err == nil {
		t.Error("a reading grading does not know opened")
	}
	short := writePings(t, 3)
	if rec, err := Open(short, ToReplay); err != nil || !rec.Long() || rec.Len() != 3 {
		t.Errorf("a short fixture opened to replay is not streamed: %v", err)
	}
}
