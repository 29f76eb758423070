package axum

import (
	"bytes"
	"strings"
	"testing"
)

func TestRedactQueryParams(t *testing.T) {
	req := "GET /api/v1/items?page=2&TOKEN=tok1&api_key=key2&x=1&session_id=sid3 HTTP/1.1\r\nHost: x\r\nReferer: http://x/?access_token=acc4\r\n\r\n"
	out, note := Codec{SecretParams: []string{"session_id"}}.Redact([]byte(req))
	want := "GET /api/v1/items?page=2&TOKEN=%3Credacted%3E&api_key=%3Credacted%3E&x=1&session_id=%3Credacted%3E HTTP/1.1\r\nHost: x\r\nReferer: http://x/?access_token=%3Credacted%3E\r\n\r\n"
	if string(out) != want || !strings.Contains(note, "query") {
		t.Errorf("Redact = %q (%q)\nwant %q", out, note, want)
	}
	// Without the extra name, session_id stays.
	out, _ = Codec{}.Redact([]byte(req))
	if !bytes.Contains(out, []byte("session_id=sid3")) || bytes.Contains(out, []byte("tok1")) {
		t.Errorf("Redact with the defaults = %q", out)
	}
	if n, err := SplitRequest(out); err != nil || n != len(out) {
		t.Errorf("redacted request is not one message: %d, %v", n, err)
	}
}

func TestRedactReplySetCookie(t *testing.T) {
	resp := "HTTP/1.1 302 Found\r\nSet-Cookie: sid=abc123; HttpOnly\r\nset-cookie : theme=dark\r\nLocation: /home?token=t0k\r\nContent-Length: 4\r\n\r\nsid="
	out, note := Codec{}.RedactReply(nil, []byte(resp))
	want := "HTTP/1.1 302 Found\r\nSet-Cookie: <redacted>\r\nset-cookie : <redacted>\r\nLocation: /home?token=%3Credacted%3E\r\nContent-Length: 4\r\n\r\nsid="
	if string(out) != want || note == "" {
		t.Errorf("RedactReply = %q (%q)\nwant %q", out, note, want)
	}
	if Codec.ReplyMayHoldSecret(Codec{}, []byte("GET / HTTP/1.1\r\n\r\n")) {
		t.Error("ReplyMayHoldSecret: the HTTP redactor needs no request")
	}
}

func TestRedactRawHeaders(t *testing.T) {
	req := "GET /x?token=abc HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer hunter2\r\nX-Api-Key\t:\tk3y\r\ncookie:sid=1\r\n\r\n"
	out, note := Codec{}.RedactRaw([]byte(req), true)
	for _, secret := range []string{"hunter2", "k3y", "sid=1", "abc"} {
		if bytes.Contains(out, []byte(secret)) {
			t.Errorf("RedactRaw left %q in %q", secret, out)
		}
	}
	if note == "" || !bytes.Contains(out, []byte("Host: x\r\n")) {
		t.Errorf("RedactRaw = %q, %q", out, note)
	}
}

// FuzzRedactRaw: never panics, and a planted header value or query token
// never survives, whatever comes around it.
func FuzzRedactRaw(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\n"), []byte("\r\n\r\n"), "hunter2")
	f.Add([]byte("\xf3"), []byte(""), "00")
	f.Fuzz(func(t *testing.T, before, after []byte, secret string) {
		if len(secret) < 3 || strings.ContainsAny(secret, " \t\r\n&#;\"':") || strings.Contains(Redacted, secret) ||
			bytes.Contains(before, []byte(secret)) || bytes.Contains(after, []byte(secret)) {
			return
		}
		data := append(bytes.Clone(before), "\nAuthorization : Bearer "+secret+"\r\nGET /?api_key="+secret+" HTTP/1.1\r\n"...)
		data = append(data, after...)
		out, _ := Codec{}.RedactRaw(data, true)
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("RedactRaw(%q) = %q: the secret survived", data, out)
		}
	})
}
