package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// segEvent is an event of a hand-written segment; redacted adds a
// redaction note for it.
type segEvent struct {
	conn     uint64
	dir      kavach.Direction
	ms       int
	data     string
	redacted bool
}

func cmd(args ...string) string {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return string(redis.AppendCommand(nil, b...))
}

// writeSegment writes a segment file of events in dir, starting at b.
func writeSegment(t *testing.T, dir string, h fixtures.Header, b boundary, evs []segEvent) *segment {
	t.Helper()
	path := filepath.Join(dir, "seg"+b.at.String()+fixtures.Ext)
	w, err := fixtures.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		seq, err := w.Event(kavach.Event{Conn: e.conn, Dir: e.dir, Offset: time.Duration(e.ms) * time.Millisecond, Data: []byte(e.data)})
		if err != nil {
			t.Fatal(err)
		}
		if e.redacted {
			w.Write(fixtures.Record{Kind: fixtures.KindRedaction, Redaction: &fixtures.Redaction{Seq: seq, Note: "test"}})
		}
	}
	end := time.Duration(evs[len(evs)-1].ms) * time.Millisecond
	if err := w.Close(fixtures.End{Duration: end}); err != nil {
		t.Fatal(err)
	}
	return &segment{path: path, at: b, end: end}
}

// TestCutStartsLikeARecordingStartedThen: a cut from 100 ms of two
// segments holds what a recording started at 100 ms would: connection 1
// (open since 0) opened at offset 0, the reply to its GET sent before the
// cut left out (planted: kept, it would pair with the INCR after it),
// connection 2 (closed before) absent, steps and the failure numbered from
// the cut's first request, the redaction note on its event's new number.
func TestCutStartsLikeARecordingStartedThen(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := fixtures.Header{Protocol: redis.Protocol, Start: start}
	seg1 := writeSegment(t, dir, h, boundary{open: map[uint64]int{}}, []segEvent{
		{1, kavach.Open, 0, "", false},
		{1, kavach.Request, 10, cmd("SET", "a", "1"), false},
		{1, kavach.Response, 11, "+OK\r\n", false},
		{1, kavach.Request, 20, cmd("GET", "a"), false}, // answered after the cut's start
		{2, kavach.Open, 30, "", false},
		{2, kavach.Request, 40, cmd("PING"), false},
		{2, kavach.Response, 41, "+PONG\r\n", false},
		{2, kavach.Close, 45, "client", false},
	})
	seg2 := writeSegment(t, dir, h, boundary{at: 50 * time.Millisecond, steps: 3, open: map[uint64]int{1: 1}}, []segEvent{
		{1, kavach.Response, 110, "$1\r\n1\r\n", false}, // the GET's reply
		{1, kavach.Request, 120, cmd("INCR", "a"), false},
		{1, kavach.Response, 121, ":2\r\n", false},
		{3, kavach.Open, 130, "", false},
		{3, kavach.Request, 140, cmd("LPUSH", "a", "x"), true},
		{3, kavach.Response, 141, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", false},
	})
	out := filepath.Join(dir, "cuts")
	os.Mkdir(out, 0o755)
	fail := &kavach.Failure{Step: 5, Oracle: kavach.Oracle{Kind: kavach.Error, Class: "WRONGTYPE"}, Signature: "error:WRONGTYPE"}
	path, err := writeCut(cutSpec{dir: out, name: "c" + fixtures.Ext, segs: []*segment{seg1, seg2}, from: 100 * time.Millisecond,
		failure: fail, header: h, codec: redis.Integration{}, create: createFile})
	if err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range fx.Events {
		got = append(got, strings.TrimSpace(ev.Dir.String()+" "+string(rune('0'+ev.Conn))+" "+ev.Offset.String()+" "+strings.ReplaceAll(string(ev.Data), "\r\n", " ")))
	}
	want := []string{
		"open 1 0s",
		"request 1 20ms *2 $4 INCR $1 a",
		"response 1 21ms :2",
		"open 3 30ms",
		"request 3 40ms *3 $5 LPUSH $1 a $1 x",
		"response 3 41ms -WRONGTYPE Operation against a key holding the wrong kind of value",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("cut's events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !fx.Header.Start.Equal(start.Add(100 * time.Millisecond)) {
		t.Errorf("cut's start %v, want the recording's plus 100 ms", fx.Header.Start)
	}
	if fx.Failure == nil || fx.Failure.Step != 2 {
		t.Errorf("cut's failure %+v, want step 2", fx.Failure)
	}
	if len(fx.Redactions) != 1 || fx.Redactions[0].Seq != fx.Events[4].Seq {
		t.Errorf("cut's redactions %+v, want one on the LPUSH (seq %d)", fx.Redactions, fx.Events[4].Seq)
	}
	if _, err := os.Stat(filepath.Join(out, ".c"+fixtures.Ext+".tmp")); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}
	// A second cut of the same name takes another, never replacing the first.
	again, err := writeCut(cutSpec{dir: out, name: "c" + fixtures.Ext, segs: []*segment{seg2}, from: 0,
		header: h, codec: redis.Integration{}, create: createFile})
	if err != nil || again != filepath.Join(out, "c-1"+fixtures.Ext) {
		t.Fatalf("second cut of the same name: %s, %v", again, err)
	}
}
