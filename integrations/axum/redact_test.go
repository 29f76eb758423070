package axum

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func TestRedactQueryParams(t *testing.T) {
	req := "GET /api/v1/items?page=2&TOKEN=tok1&api_key=key2&x=1&session_id=sid3 HTTP/1.1\r\nHost: x\r\nReferer: http://x/?access_token=acc4\r\n\r\n"
	out, note := Integration{SecretParams: []string{"session_id"}}.Redact([]byte(req))
	want := "GET /api/v1/items?page=2&TOKEN=%3Credacted%3E&api_key=%3Credacted%3E&x=1&session_id=%3Credacted%3E HTTP/1.1\r\nHost: x\r\nReferer: http://x/?access_token=%3Credacted%3E\r\n\r\n"
	if string(out) != want || !strings.Contains(note, "query") {
		t.Errorf("Redact = %q (%q)\nwant %q", out, note, want)
	}
	// Without the extra name, session_id stays.
	out, _ = Integration{}.Redact([]byte(req))
	if !bytes.Contains(out, []byte("session_id=sid3")) || bytes.Contains(out, []byte("tok1")) {
		t.Errorf("Redact with the defaults = %q", out)
	}
	if n, err := SplitRequest(out); err != nil || n != len(out) {
		t.Errorf("redacted request is not one message: %d, %v", n, err)
	}
}

func TestRedactReplySetCookie(t *testing.T) {
	resp := "HTTP/1.1 302 Found\r\nSet-Cookie: sid=abc123; HttpOnly\r\nset-cookie : theme=dark\r\nLocation: /home?token=t0k\r\nContent-Length: 4\r\n\r\nsid="
	out, note := Integration{}.RedactReply(nil, []byte(resp))
	want := "HTTP/1.1 302 Found\r\nSet-Cookie: <redacted>\r\nset-cookie : <redacted>\r\nLocation: /home?token=%3Credacted%3E\r\nContent-Length: 4\r\n\r\nsid="
	if string(out) != want || note == "" {
		t.Errorf("RedactReply = %q (%q)\nwant %q", out, note, want)
	}
	if Integration.ReplyMayHoldSecret(Integration{}, []byte("GET / HTTP/1.1\r\n\r\n")) {
		t.Error("ReplyMayHoldSecret: the HTTP redactor needs no request")
	}
}

func TestRedactRawHeaders(t *testing.T) {
	req := "GET /x?token=abc HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer hunter2\r\nX-Api-Key\t:\tk3y\r\ncookie:sid=1\r\n\r\n"
	out, note := Integration{}.RedactRaw([]byte(req), true)
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
		out, _ := Integration{}.RedactRaw(data, true)
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("RedactRaw(%q) = %q: the secret survived", data, out)
		}
	})
}

// TestRedactEchoedCredentials: a service that echoes what it was sent —
// headers, credential-named query parameters, JSON members — has them
// redacted in its reply as in the request, and both stay one message.
func TestRedactEchoedCredentials(t *testing.T) {
	body := `{"user":"ada","Password":"hunter2","nested":{"token":"tok-9","note":"the \"password\": kept"},"list":[{"secret":"s3"}],"n":1}`
	req := "POST /login?password=pw1&secret=sec2&session_token=st3&page=1 HTTP/1.1\r\nHost: x\r\nX-Auth-Token: xat4\r\n" +
		"Authorization: Basic YWRhOmh1bnRlcjI=\r\nContent-Type: application/json\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	out, note := Integration{}.Redact([]byte(req))
	for _, secret := range []string{"pw1", "sec2", "st3", "xat4", "YWRhOmh1bnRlcjI", "hunter2", "tok-9", "s3"} {
		if bytes.Contains(out, []byte(secret)) {
			t.Errorf("Redact left %q in %q", secret, out)
		}
	}
	if !bytes.Contains(out, []byte(`"user":"ada"`)) || !bytes.Contains(out, []byte(`the \"password\": kept`)) || !bytes.Contains(out, []byte("page=1")) {
		t.Errorf("Redact replaced more than the secrets: %q", out)
	}
	if !strings.Contains(note, "body") || !strings.Contains(note, "X-Auth-Token") {
		t.Errorf("note %q", note)
	}
	if m, err := Parse(out, true); err != nil || !bytes.HasPrefix(m.Body, []byte(`{"user":"ada","Password":"<redacted>"`)) {
		t.Errorf("redacted request does not parse as one message: %v %q", err, out)
	}

	echo := `{"headers":{"authorization":"Basic YWRhOmh1bnRlcjI=","x-auth-token":"xat4"},"access_token":"at5"}`
	for _, resp := range []string{
		"HTTP/1.1 200 OK\r\nX-Auth-Token: xat4\r\nAuthorization: Bearer b6\r\nContent-Type: application/json\r\nContent-Length: " + itoa(len(echo)) + "\r\n\r\n" + echo,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.ToUpper(itoaHex(len(echo))) + "\r\n" + echo + "\r\n0\r\n\r\n",
	} {
		out, note := Integration{SecretParams: []string{"authorization"}}.RedactReply(nil, []byte(resp))
		for _, secret := range []string{"xat4", "b6", "at5", "YWRhOmh1bnRlcjI"} {
			if bytes.Contains(out, []byte(secret)) {
				t.Errorf("RedactReply left %q in %q", secret, out)
			}
		}
		if n, err := SplitResponse(out); err != nil || n != len(out) || note == "" {
			t.Errorf("redacted reply %q is not one message: %d, %v (%q)", out, n, err, note)
		}
	}
	// A form body.
	form := "user=ada&password=hunter2&x=1"
	out, _ = Integration{}.Redact([]byte("POST /f HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " + itoa(len(form)) + "\r\n\r\n" + form))
	if bytes.Contains(out, []byte("hunter2")) || !bytes.Contains(out, []byte("user=ada&password=%3Credacted%3E&x=1")) {
		t.Errorf("form body: %q", out)
	}
}

// TestRedactAddedName: a name given with --redact is redacted as a
// header, a query parameter and a JSON member.
func TestRedactAddedName(t *testing.T) {
	body := `{"pin":"4321"}`
	req := "POST /p?pin=1234 HTTP/1.1\r\nX-Pin: 9876\r\nPin: 5555\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	out, _ := Integration{SecretParams: []string{"PIN", "x-pin"}}.Redact([]byte(req))
	for _, secret := range []string{"4321", "1234", "9876", "5555"} {
		if bytes.Contains(out, []byte(secret)) {
			t.Errorf("left %q in %q", secret, out)
		}
	}
}

func itoa(n int) string    { return strconv.Itoa(n) }
func itoaHex(n int) string { return strconv.FormatInt(int64(n), 16) }

// FuzzRedactBody: never panics; a redacted message is still one whole
// message; a secret planted as a JSON member's value never survives.
func FuzzRedactBody(f *testing.F) {
	f.Add(`{"a":1}`, "hunter2", false)
	f.Add(`[{"x":"y"},`, "s3cr3t", true)
	f.Fuzz(func(t *testing.T, before, secret string, chunked bool) {
		if len(secret) < 3 || strings.ContainsAny(secret, "\"\\") || strings.Contains(Redacted, secret) ||
			strings.Contains(before, secret) || strings.Contains(before, `"`) {
			return
		}
		body := "{" + before + `"password":"` + secret + `"}`
		if !strings.HasPrefix(before, " ") {
			body = `{"password":"` + secret + `",` + strconv.Quote(before) + ":1}"
		}
		var req string
		if chunked {
			req = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + itoaHex(len(body)) + "\r\n" + body + "\r\n0\r\n\r\n"
		} else {
			req = "POST / HTTP/1.1\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
		}
		out, _ := Integration{}.Redact([]byte(req))
		if n, err := SplitRequest(out); err != nil || n != len(out) {
			t.Fatalf("Redact(%q) = %q: not one message (%d, %v)", req, out, n, err)
		}
		m, err := Parse(out, true)
		if err != nil {
			t.Fatalf("Redact(%q) = %q: %v", req, out, err)
		}
		if strings.Contains(string(m.Body), secret) && !strings.Contains(strconv.Quote(before), secret) {
			t.Fatalf("Redact(%q) = %q: the secret survived", req, out)
		}
	})
}
