package record_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/axum"
	"github.com/kavach-dev/kavach/record"
)

// TestSetCookieRedacted: a real HTTP server (net/http) sets cookies and
// redirects with a token; the proxy writes none of them to the fixture,
// and the client gets them unchanged.
func TestSetCookieRedacted(t *testing.T) {
	const cookie, token = "planted-cookie-value-0a1b", "planted-redirect-token-2c3d"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: cookie, HttpOnly: true})
		w.Header().Set("Location", "/next?access_token="+token)
		w.WriteHeader(http.StatusFound)
		io.WriteString(w, "moved")
	}))
	defer srv.Close()
	rec := startRecording(t, strings.TrimPrefix(srv.URL, "http://"), func(o *record.Options) {
		o.Codec, o.Redactor = axum.Integration{}, axum.Integration{}.Abilities().Redaction
	})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get("http://" + rec.addr() + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := resp.Cookies(); len(c) != 1 || c[0].Value != cookie || !strings.Contains(resp.Header.Get("Location"), token) {
		t.Errorf("the client got cookies %v, Location %q: not forwarded unchanged", c, resp.Header.Get("Location"))
	}
	client.CloseIdleConnections()
	fx := rec.finish()
	redacted := 0
	for _, ev := range fx.Events {
		if bytes.Contains(ev.Data, []byte(cookie)) || bytes.Contains(ev.Data, []byte(token)) {
			t.Errorf("event %d holds a secret: %q", ev.Seq, ev.Data)
		}
		if ev.Dir == kavach.Response && ev.Flags&kavach.Redacted != 0 {
			redacted++
		}
	}
	if redacted != 1 || len(fx.Redactions) != 1 {
		t.Errorf("%d responses flagged redacted, %d redaction records; want 1 and 1", redacted, len(fx.Redactions))
	}
	plain, err := exec.Command("zstd", "-dc", rec.path).Output()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte(cookie)) || bytes.Contains(plain, []byte(token)) {
		t.Error("zstd -dc of the fixture holds a secret")
	}
}
