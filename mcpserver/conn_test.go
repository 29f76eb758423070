package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// syncBuffer is a bytes.Buffer safe for the connection's writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) Close() error { return nil }

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// readAllMessages reads a lineConn over input until it ends, and returns
// the messages handed on and what the connection wrote back.
func readAllMessages(t *testing.T, input []byte) ([]jsonrpc.Message, string) {
	var out syncBuffer
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
	}
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
	if n := strings.Count(out, "\n"); n != 1 || !strings.Contains(out, `"code":-32700`) {
		t.Errorf("answers %q, want one parse error", out)
	}
}

// TestLineConnDropsCancelled: no response goes out to a request the
// client cancelled; others do.
func TestLineConnDropsCancelled(t *testing.T) {
	var out syncBuffer
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
			if line == "" {
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
// answered gets an error answer (it would otherwise never be answered);
// once the first is answered, the id may be used again.
func TestLineConnRefusesReusedID(t *testing.T) {
	var out syncBuffer
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
	if got := out.String(); !strings.Contains(got, `"id":5`) || !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, "not yet answered") {
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
