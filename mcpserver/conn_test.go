package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/kavach-dev/kavach/internal/syncbuf"
)

// readAllMessages reads a lineConn over input until it ends, and returns
// the messages handed on and what the connection wrote back.
func readAllMessages(t *testing.T, input []byte) ([]jsonrpc.Message, string) {
	var out syncbuf.Buffer
	conn, err := (&lineTransport{r: io.NopCloser(bytes.NewReader(input)), w: &out}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var msgs []jsonrpc.Message
	for {
		msg, err := conn.Read(context.Background())
		if errors.Is(err, io.EOF) {
			return msgs, out.String()
		}
		if err != nil {
			t.Fatalf("Read: %v (a bad line must be answered, not end the connection)", err)
		}
		msgs = append(msgs, msg)
		// Answer each call, as the server does: the input's end is
		// reported only once every call read is answered.
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			if err := conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// answers are the lines written that are errors, not responses the test
// wrote for the calls.
func answers(out string) []string {
	var errs []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.Contains(l, `"error"`) {
			errs = append(errs, l)
		}
	}
	return errs
}

func TestLineConn(t *testing.T) {
	input := strings.Join([]string{
		`{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`,
		`not json`,
		``,
		`   `,
		`{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}`,
		`{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}`,
		`{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}` + "\r",
		`{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}`, // no end of line
	}, "\n")
	msgs, out := readAllMessages(t, []byte(input))
	if len(msgs) != 5 {
		t.Fatalf("%d messages handed on, want 5 (ids 1 to 4 and the cancellation): %v", len(msgs), msgs)
	}
	if errs := answers(out); len(errs) != 1 || !strings.Contains(errs[0], `"code":-32700`) {
		t.Errorf("answers %q, want one parse error", out)
	}
}

// TestLineConnAnswersBeforeEnd: when the input ends with calls still
// unanswered, Read does not report the end (after which the SDK writes
// nothing) until they are answered.
func TestLineConnAnswersBeforeEnd(t *testing.T) {
	var out syncbuf.Buffer
	conn, _ := (&lineTransport{r: io.NopCloser(strings.NewReader(
		`{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}` + "\n" +
			`{"jsonrpc": "2.0", "id": "two", "method": "tools/list"}` + "\n")), w: &out}).Connect(context.Background())
	defer conn.Close()
	var calls []*jsonrpc.Request
	for range 2 {
		msg, err := conn.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, msg.(*jsonrpc.Request))
	}
	// The input has ended; with answers owed, a Read whose context ends
	// returns that, never the end. (Read chooses at random between
	// ready cases: repeated, an early end shows.)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 50 {
		if _, err := conn.Read(done); !errors.Is(err, context.Canceled) {
			t.Fatalf("Read %d with two calls unanswered: %v, want to wait for their answers", i, err)
		}
	}
	for i, req := range calls {
		if err := conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := conn.Read(done); !errors.Is(err, context.Canceled) {
				t.Fatalf("Read with one call unanswered: %v, want to wait for its answer", err)
			}
		}
	}
	if _, err := conn.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Read with every call answered: %v, want the end", err)
	}
}

// TestLineConnIDKept: an error answers with the request's id whenever it
// can be read, so that the client waiting on it gets its answer: a line
// too long to read, one cut short, one that is not a JSON-RPC message.
func TestLineConnIDKept(t *testing.T) {
	for _, tc := range []struct {
		name, line, id string
	}{
		{"too long", `{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"x": "` + strings.Repeat("x", maxLine) + `"}}`, `10`},
		{"too long, id last", `{"jsonrpc": "2.0", "method": "tools/call", "params": {"x": "` + strings.Repeat(`\"{`, maxLine) + `"}, "id": "late"}`, `"late"`},
		{"cut short", `{"jsonrpc": "2.0", "id": "raw-7", "method": "tools/li`, `"raw-7"`},
		{"not JSON-RPC", `{"id": 8, "method": "tools/list"}`, `8`},
		{"nested id is not the id", `{"params": {"id": 3}, "method": `, `null`},
		{"not an id", `{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}`, `null`},
		{"not JSON", `hello, kavach`, `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, out := readAllMessages(t, []byte(tc.line+"\n"))
			errs := answers(out)
			if len(errs) != 1 || !strings.Contains(errs[0], `"id":`+tc.id+`,`) {
				t.Errorf("answers %.300q, want one error with id %s", out, tc.id)
			}
		})
	}
}

// TestLineConnDuplicateID: a call reusing the id of one not yet answered
// is refused (its answer would be taken for the first's); the first is
// still answered, and the end still comes.
func TestLineConnDuplicateID(t *testing.T) {
	msgs, out := readAllMessages(t, []byte(`{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`+"\n"))
	if len(msgs) != 1 || len(answers(out)) != 0 {
		t.Fatalf("one call: %v %q", msgs, out)
	}
	// The duplicate is sent while the first is in flight (not yet
	// answered), and the first is answered only once the duplicate has
	// been refused: a duplicate read after the answer would be a new
	// request, rightly handed on.
	var w syncbuf.Buffer
	pr, pw := io.Pipe()
	conn, _ := (&lineTransport{r: pr, w: &w}).Connect(context.Background())
	defer conn.Close()
	line := []byte(`{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}` + "\n")
	go pw.Write(line)
	msg, err := conn.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	go pw.Write(line)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(w.String(), "already in use"); {
		if time.Now().After(deadline) {
			t.Fatalf("the duplicate sent while id 1 was in flight was not refused: %q", w.String())
		}
		time.Sleep(time.Millisecond)
	}
	if err := conn.Write(context.Background(), &jsonrpc.Response{ID: msg.(*jsonrpc.Request).ID, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if _, err := conn.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("second Read: %v, want the end (the duplicate refused, not handed on)", err)
	}
	if errs := answers(w.String()); len(errs) != 1 || !strings.Contains(errs[0], "already in use") {
		t.Errorf("answers %q, want the duplicate refused", w.String())
	}
}

// TestLineConnCutsEcho: an error's message quoting a long value the
// client sent (an unknown method's name) is cut, at a character.
func TestLineConnCutsEcho(t *testing.T) {
	var out syncbuf.Buffer
	conn, _ := (&lineTransport{r: io.NopCloser(strings.NewReader("")), w: &out}).Connect(context.Background())
	defer conn.Close()
	id, _ := jsonrpc.MakeID("x")
	long := strings.Repeat("é", 100_000)
	if err := conn.Write(context.Background(), &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: -32601, Message: `method not found: "` + long + `"`}}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if len(got) > 1000 || !strings.Contains(got, "(200002 bytes)") || !utf8.ValidString(got) {
		t.Errorf("answer %d bytes: %.400s; want the method's name cut to about 200 characters, with its size", len(got), got)
	}
}

// FuzzIDScan: the id idScan finds in a JSON object, fed in pieces, is
// the one a JSON decoder finds, when it finds one; and on input with no
// escapes and a short id, it always finds it.
func FuzzIDScan(f *testing.F) {
	f.Add([]byte(`{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`), 3)
	f.Add([]byte(`{"params": {"id": 2, "a": [1, {"id": 3}]}, "id": "x,}"}`), 7)
	f.Add([]byte(`{"id": 1, "id": 2}`), 1)
	f.Add([]byte(`{"ID": 1}`), 1)
	f.Fuzz(func(t *testing.T, line []byte, split int) {
		var s idScan
		if split < 0 || split > len(line) {
			split = len(line) / 2
		}
		s.Write(line[:split])
		s.Write(line[split:])
		got := s.ID()
		var probe map[string]json.RawMessage
		if json.Unmarshal(line, &probe) != nil {
			return
		}
		var want any
		if raw, ok := probe["id"]; ok {
			var v any
			if json.Unmarshal(raw, &v) == nil {
				if id, err := jsonrpc.MakeID(v); err == nil && id.IsValid() {
					want = id.Raw()
				}
			}
		}
		if got != nil && got != want {
			t.Fatalf("id %#v in %q, want %#v", got, line, want)
		}
		if got == nil && want != nil && !bytes.Contains(line, []byte(`\`)) && len(probe["id"]) < maxIDBytes/2 {
			t.Fatalf("no id found in %q, want %#v", line, want)
		}
	})
}

// TestLineConnDropsCancelled: no response goes out to a request the
// client cancelled; others do.
func TestLineConnDropsCancelled(t *testing.T) {
	var out syncbuf.Buffer
	conn, _ := (&lineTransport{r: io.NopCloser(strings.NewReader(
		`{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}` + "\n")), w: &out}).Connect(context.Background())
	defer conn.Close()
	if _, err := conn.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{7, 8} {
		rid, _ := jsonrpc.MakeID(float64(id))
		if err := conn.Write(context.Background(), &jsonrpc.Response{ID: rid, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := out.String(); strings.Contains(got, `"id":7`) || !strings.Contains(got, `"id":8`) {
		t.Errorf("written %q: want the response to 8 only", got)
	}
}

// FuzzLineConn: any input is read to its end without an error; every line
// written back is one JSON-RPC error object.
func FuzzLineConn(f *testing.F) {
	f.Add([]byte(`{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}` + "\n"))
	f.Add([]byte("hello\n[1,2]\n42\n{\"id\": {}}\n"))
	f.Add([]byte(`{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "x"}}` + "\n"))
	f.Add([]byte(strings.Repeat("x", maxLine+10) + "\n{}\n"))
	f.Fuzz(func(t *testing.T, input []byte) {
		_, out := readAllMessages(t, input)
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if line == "" || strings.HasSuffix(line, `"result":{}}`) { // the helper's answer to a call
				continue
			}
			var m struct {
				Version string          `json:"jsonrpc"`
				Error   *jsonrpc.Error  `json:"error"`
				ID      json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil || m.Version != "2.0" || m.Error == nil || m.ID == nil {
				t.Errorf("answer %q is not a JSON-RPC error: %v", line, err)
			}
		}
	})
}

// TestLineConnRefusesReusedID: a request reusing the id of one not yet
// answered gets an error answer (it would otherwise never be answered),
// with id null so that no client takes it for the first request's answer,
// naming the id; once the first is answered, the id may be used again.
func TestLineConnRefusesReusedID(t *testing.T) {
	var out syncbuf.Buffer
	pr, pw := io.Pipe()
	conn, _ := (&lineTransport{r: pr, w: &out}).Connect(context.Background())
	defer conn.Close()
	send := func(line string) {
		t.Helper()
		if _, err := pw.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	read := func() jsonrpc.Message {
		t.Helper()
		msg, err := conn.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	send(`{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}`)
	if req, ok := read().(*jsonrpc.Request); !ok || fmt.Sprint(req.ID.Raw()) != "5" {
		t.Fatalf("first request not handed on")
	}
	send(`{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}`)
	send(`{"jsonrpc": "2.0", "id": 6, "method": "tools/list"}`)
	if req, ok := read().(*jsonrpc.Request); !ok || fmt.Sprint(req.ID.Raw()) != "6" {
		t.Fatalf("the request after the reused id: %v", req)
	}
	if got := out.String(); !strings.Contains(got, `"id":null`) || !strings.Contains(got, "request id 5 ") || !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "not yet answered") {
		t.Fatalf("written %q: want an error answer to the reused id 5", got)
	}
	rid, _ := jsonrpc.MakeID(float64(5))
	if err := conn.Write(context.Background(), &jsonrpc.Response{ID: rid, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	send(`{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}`)
	if req, ok := read().(*jsonrpc.Request); !ok || fmt.Sprint(req.ID.Raw()) != "5" {
		t.Fatalf("id 5, once answered, was not taken again")
	}
	pw.Close()
}
