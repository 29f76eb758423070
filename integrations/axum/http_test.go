package axum

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
)

var validRequests = []string{
	"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
	"POST /api/v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 45\r\n\r\n{\"name\":\"pen\",\"price_cents\":250,\"quantity\":3}",
	"POST /api/v1/items/1/split HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"par\r\na\r\nts\": 0}   \r\n0\r\n\r\n",
	"DELETE /api/v1/items/7?force=true&n=3 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n\r\n",
}

var validResponses = []string{
	"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 15\r\ndate: Sun, 29 Nov 2026 12:00:00 GMT\r\n\r\n{\"status\":\"ok\"}",
	"HTTP/1.1 201 Created\r\nlocation: /api/v1/items/1\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{\"id\r\n4\r\n\":1}\r\n0\r\n\r\n",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\n",
	"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n",
}

func TestSplitWholeAndPipelined(t *testing.T) {
	for _, req := range validRequests {
		n, err := SplitRequest([]byte(req + validRequests[0]))
		if err != nil || n != len(req) {
			t.Errorf("SplitRequest(%.40q + another) = %d, %v; want %d", req, n, err, len(req))
		}
		for i := 0; i < len(req); i++ {
			if n, err := SplitRequest([]byte(req[:i])); n != 0 || err != nil {
				t.Fatalf("SplitRequest of a %d-byte prefix of %.40q = %d, %v; want need-more", i, req, n, err)
			}
		}
	}
	for _, resp := range validResponses {
		n, err := SplitResponse([]byte(resp + validResponses[0]))
		if err != nil || n != len(resp) {
			t.Errorf("SplitResponse(%.40q + another) = %d, %v; want %d", resp, n, err, len(resp))
		}
		for i := 0; i < len(resp); i++ {
			if n, err := SplitResponse([]byte(resp[:i])); n != 0 || err != nil {
				t.Fatalf("SplitResponse of a %d-byte prefix of %.40q = %d, %v", i, resp, n, err)
			}
		}
	}
}

func TestParse(t *testing.T) {
	m, err := Parse([]byte(validRequests[2]), true)
	if err != nil {
		t.Fatal(err)
	}
	if m.Method != "POST" || m.Path != "/api/v1/items/1/split" || string(m.Body) != `{"parts": 0}   ` {
		t.Errorf("parsed %+v body %q", m, m.Body)
	}
	m, err = Parse([]byte(validRequests[3]), true)
	if err != nil || m.Query != "force=true&n=3" || m.Header("authorization") != "Bearer s3cret" {
		t.Errorf("parsed %+v, %v", m, err)
	}
}

func TestMalformed(t *testing.T) {
	for _, tt := range []struct {
		data    string
		request bool
		reason  string
	}{
		{"\x00\xffgarbage\r\n", true, "not an HTTP/1.1 request line"},
		{"hello world\r\n\r\n", true, "not an HTTP/1.1 request line"},
		{"GET /x HTTP/1.1\r\nno colon here\r\n\r\n", true, "malformed header line"},
		{"POST /x HTTP/1.1\r\nContent-Length: -3\r\n\r\n", true, "bad Content-Length"},
		{"POST /x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", true, "two different Content-Lengths"},
		{"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", true, "bad chunk size"},
		{"HTTP/1.1 2x0 OK\r\n\r\n", false, "bad status"},
		{"SSH-2.0-OpenSSH\r\n", false, "not an HTTP/1.1 status line"},
		{"-ERR redis\r\n", false, "not an HTTP/1.1"},
	} {
		_, err := splitOne([]byte(tt.data), tt.request)
		var pe *ProtocolError
		if !errors.As(err, &pe) || !strings.Contains(pe.Error(), tt.reason) {
			t.Errorf("split(%q) = %v, want a protocol error: %s", tt.data, err, tt.reason)
		}
	}
}

func splitOne(data []byte, request bool) (int, error) {
	if request {
		return SplitRequest(data)
	}
	return SplitResponse(data)
}

func TestNormalize(t *testing.T) {
	c := Integration{}
	got := c.Normalize(nil, []byte(validResponses[0]))
	want := map[string]any{"status": int64(200), "headers": map[string]any{"content-type": "application/json"}, "body": map[string]any{"status": "ok"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Normalize (-want +got):\n%s", diff)
	}
	// Chunked and Content-Length framings of one body compare equal.
	a := c.Normalize(nil, []byte("HTTP/1.1 201 Created\r\ncontent-length: 8\r\n\r\n{\"id\":1}"))
	b := c.Normalize(nil, []byte(validResponses[1]))
	delete(b.(map[string]any)["headers"].(map[string]any), "location")
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("framings differ (-cl +chunked):\n%s", diff)
	}
	// A header the fixture declares volatile is left out too.
	withID := []byte("HTTP/1.1 200 OK\r\nx-request-id: 7f3a\r\ncontent-length: 0\r\n\r\n")
	if h := (Integration{Volatile: []string{"X-Request-Id"}}).Normalize(nil, withID).(map[string]any)["headers"].(map[string]any); len(h) != 0 {
		t.Errorf("declared volatile header compared: %v", h)
	}
	if h := c.Normalize(nil, withID).(map[string]any)["headers"].(map[string]any); h["x-request-id"] != "7f3a" {
		t.Errorf("undeclared header not compared: %v", h)
	}
	if o := c.Classify(nil, [][]byte{[]byte(validResponses[4])}); o.String() != "error:5xx" {
		t.Errorf("500 classified %s", o)
	}
	if o := c.Classify(nil, [][]byte{[]byte(validResponses[3]), []byte(validResponses[2])}); o.Kind != kavach.OK {
		t.Errorf("100 then 204 classified %s", o)
	}
}

func TestRedact(t *testing.T) {
	out, note := Integration{}.Redact([]byte(validRequests[3]))
	if note != "Authorization header" || bytes.Contains(out, []byte("s3cret")) || !bytes.Contains(out, []byte("Authorization: <redacted>")) {
		t.Errorf("Redact = %q, %q", out, note)
	}
	if n, err := SplitRequest(out); err != nil || n != len(out) {
		t.Errorf("redacted request does not frame: %d, %v", n, err)
	}
	out, _ = Integration{}.Redact([]byte(strings.Replace(validRequests[2], "Host: x", "Cookie: sid=1", 1)))
	m, err := Parse(out, true)
	if err != nil || string(m.Body) != `{"parts": 0}   ` {
		t.Errorf("redacted chunked request: %+v, %v", m, err)
	}
}

func TestFieldsAndRebuild(t *testing.T) {
	c := Integration{}
	kind, fields, ok := c.Fields([]byte(validRequests[2]), nil)
	if !ok || kind != "POST /api/v1/items/{n}/split" {
		t.Fatalf("kind %q", kind)
	}
	var keys []string
	for _, f := range fields {
		keys = append(keys, fmt.Sprintf("%s=%s:%s", f.Key, f.Value, f.Type))
	}
	// The names in the path are keys: varied to other names and to one no
	// route has.
	if want := "[path.4=1:number path.1=api:key path.2=v1:key path.3=items:key path.5=split:key body.parts=0:number]"; fmt.Sprint(keys) != want {
		t.Errorf("fields %v, want %s", keys, want)
	}
	fields[5].Value = "-1"
	m, err := Parse(c.Rebuild([]byte(validRequests[2]), fields), true)
	if err != nil || m.Path != "/api/v1/items/1/split" || string(m.Body) != `{"parts": -1}   ` {
		t.Errorf("rebuilt %+v %q, %v", m, m.Body, err)
	}
	fields[3].Value = "orders"
	if m, err := Parse(c.Rebuild([]byte(validRequests[2]), fields), true); err != nil || m.Path != "/api/v1/orders/1/split" {
		t.Errorf("a name in the path changed: %+v, %v", m, err)
	}
	// A removed field is gone from the body.
	m, _ = Parse(c.Rebuild([]byte(validRequests[1]), fieldsWithout(t, validRequests[1], "body.quantity")), true)
	if strings.Contains(string(m.Body), "quantity") || m.Header("Content-Length") != fmt.Sprint(len(m.Body)) {
		t.Errorf("removed: %q, Content-Length %s", m.Body, m.Header("Content-Length"))
	}
}

func fieldsWithout(t *testing.T, req, key string) []kavach.Field {
	_, fields, _ := Integration{}.Fields([]byte(req), nil)
	var out []kavach.Field
	for _, f := range fields {
		if f.Key != key {
			out = append(out, f)
		}
	}
	return out
}

func FuzzSplit(f *testing.F) {
	for _, r := range validRequests {
		f.Add([]byte(r), true)
	}
	for _, r := range validResponses {
		f.Add([]byte(r), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, request bool) {
		n, err := splitOne(data, request)
		if err != nil || n == 0 {
			return
		}
		if n > len(data) {
			t.Fatalf("split said %d bytes of %d", n, len(data))
		}
		m, err := Parse(data[:n], request)
		if err != nil {
			t.Fatalf("a frame split whole does not parse: %v", err)
		}
		if !bytes.Equal(m.Raw, data[:n]) {
			t.Fatalf("Raw %q is not the frame %q", m.Raw, data[:n])
		}
		if request {
			// Encoding what was parsed gives a request that frames whole
			// and carries the same body.
			enc := Encode(m)
			m2, err := Parse(enc, true)
			if err != nil || !bytes.Equal(m2.Body, m.Body) || m2.Method != m.Method {
				t.Fatalf("re-encoded %q: %v", enc, err)
			}
			Integration{}.Fields(data[:n], nil)
			Integration{}.Redact(data[:n])
		} else {
			Integration{}.Normalize(nil, data[:n])
		}
	})
}
