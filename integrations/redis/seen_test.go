package redis

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestRedactionSeenSecrets: every kind of secret the redaction replaces,
// once a request carried it, is redacted in later requests and replies,
// whole or inside a value, and a reply stays one frame.
func TestRedactionSeenSecrets(t *testing.T) {
	red := Integration{}.Abilities().Redaction
	teach := [][]string{
		{"AUTH", "Auth-Pw1"},
		{"AUTH", "bob", "User-Pw2"},
		{"HELLO", "3", "AUTH", "carol", "Hello-Pw3", "SETNAME", "conn-name"},
		{"CONFIG", "SET", "requirepass", "Config-Pw4"},
		{"ACL", "SETUSER", "alice", "on", ">Rule-Pw5", "~*", "+@all"},
		{"MIGRATE", "10.0.0.9", "6379", "", "0", "500", "AUTH2", "u", "Migrate-Pw6", "KEYS", "k"},
	}
	for _, c := range teach {
		out, note := red.Request(cmd(c...))
		if note == "" || !strings.Contains(string(out), Redacted) {
			t.Errorf("%v: Request = %q (%q): the secret argument was not redacted", c, out, note)
		}
	}
	for _, pw := range []string{"Auth-Pw1", "User-Pw2", "Hello-Pw3", "Config-Pw4", "Rule-Pw5", "Migrate-Pw6"} {
		for _, tc := range []struct {
			req  []string
			want []string
		}{
			{[]string{"ECHO", pw}, []string{"ECHO", Redacted}},
			{[]string{"SET", "k", "x" + pw + "x"}, []string{"SET", "k", "x" + Redacted + "x"}},
			{[]string{"HSET", pw + ":h", "f", pw + pw}, []string{"HSET", Redacted + ":h", "f", Redacted + Redacted}},
		} {
			out, note := red.Request(cmd(tc.req...))
			if want := string(cmd(tc.want...)); string(out) != want || !strings.Contains(note, seenNote) {
				t.Errorf("Request(%q) = %q (%q), want %q", tc.req, out, note, want)
			}
		}
		for _, tc := range []struct{ reply, want string }{
			{bulk(pw), bulk(Redacted)},
			{bulk("x" + pw + "x"), bulk("x" + Redacted + "x")},
			{"+" + pw + "\r\n", "+" + Redacted + "\r\n"},
			{"-ERR no such key '" + pw + "'\r\n", "-ERR no such key '" + Redacted + "'\r\n"},
			{"*2\r\n" + bulk("a") + bulk(pw), "*2\r\n" + bulk("a") + bulk(Redacted)},
			{"%1\r\n" + bulk(pw) + ":1\r\n", "%1\r\n" + bulk(Redacted) + ":1\r\n"},
			{">3\r\n" + bulk("message") + bulk("ch") + bulk("says "+pw), ">3\r\n" + bulk("message") + bulk("ch") + bulk("says "+Redacted)},
		} {
			// No request: the proxy keeps none for a reply that cannot hold
			// a secret the request tells (a push has none either).
			out, note := red.Reply(nil, []byte(tc.reply))
			if string(out) != tc.want || !strings.Contains(note, seenNote) {
				t.Errorf("Reply(%q) = %q (%q), want %q", tc.reply, out, note, tc.want)
			}
			if n, err := Split(out); err != nil || n != len(out) {
				t.Errorf("Reply(%q) = %q: not one frame (%d, %v)", tc.reply, out, n, err)
			}
		}
		out, note := red.Raw([]byte("$-5 echo "+pw+"\r\n"), true)
		if strings.Contains(string(out), pw) || note == "" {
			t.Errorf("Raw = %q (%q): the secret survived", out, note)
		}
	}
	// The name is not a secret, nor is what no secret touches.
	for _, req := range [][]string{{"ECHO", "conn-name"}, {"GET", "Auth-Pw"}, {"PING"}} {
		if out, note := red.Request(cmd(req...)); string(out) != string(cmd(req...)) || note != "" {
			t.Errorf("Request(%q) = %q (%q), want unchanged", req, out, note)
		}
	}
	if out, note := red.Reply(nil, []byte(":42\r\n")); string(out) != ":42\r\n" || note != "" {
		t.Errorf("Reply(:42) = %q (%q)", out, note)
	}
}

// TestRedactionSeenShortSecret: a secret shorter than MinSecretInside is
// redacted where it is a whole value (or a whole word of raw bytes), not
// inside other values.
func TestRedactionSeenShortSecret(t *testing.T) {
	red := Integration{}.Abilities().Redaction
	red.Request(cmd("AUTH", "ab"))
	for _, tc := range []struct{ req, want []string }{
		{[]string{"ECHO", "ab"}, []string{"ECHO", Redacted}},
		{[]string{"SET", "about", "tab"}, []string{"SET", "about", "tab"}},
		{[]string{"SET", "k", "ab"}, []string{"SET", "k", Redacted}},
	} {
		if out, _ := red.Request(cmd(tc.req...)); string(out) != string(cmd(tc.want...)) {
			t.Errorf("Request(%q) = %q, want %q", tc.req, out, cmd(tc.want...))
		}
	}
	if out, _ := red.Reply(nil, []byte(bulk("about"))); string(out) != bulk("about") {
		t.Errorf("Reply(about) = %q, want unchanged", out)
	}
	if out, _ := red.Reply(nil, []byte(bulk("ab"))); string(out) != bulk(Redacted) {
		t.Errorf("Reply(ab) = %q, want %q", out, bulk(Redacted))
	}
	if out, _ := red.Raw([]byte("$-5 x ab about\r\n"), true); string(out) != "$-5 x "+Redacted+" about\r\n" {
		t.Errorf("Raw = %q", out)
	}
	if MinSecretInside != 4 {
		t.Errorf("MinSecretInside = %d: docs/security.md says 4", MinSecretInside)
	}
	red.Request(cmd("AUTH", "abcd"))
	if out, _ := red.Request(cmd("SET", "k", "xabcdx")); string(out) != string(cmd("SET", "k", "x"+Redacted+"x")) {
		t.Errorf("a 4-byte secret inside a value: %q", out)
	}
}

// TestRedactionSeenPerRecording: each Abilities call's Redaction has its
// own secrets; a replay secret is known from the start; the marker is
// never redacted again, whatever the secret (a second pass, as a replay's
// comparison makes, changes nothing).
func TestRedactionSeenPerRecording(t *testing.T) {
	first, second := Integration{}.Abilities().Redaction, Integration{}.Abilities().Redaction
	first.Request(cmd("AUTH", "First-Pw"))
	if out, note := second.Request(cmd("ECHO", "First-Pw")); note != "" {
		t.Errorf("another recording's secret redacted: %q", out)
	}
	seeded := Integration{Secret: "Replay-Secret"}.Abilities().Redaction
	if out, _ := seeded.Reply(nil, []byte(bulk("is Replay-Secret"))); string(out) != bulk("is "+Redacted) {
		t.Errorf("the replay secret is not redacted: %q", out)
	}
	for _, s := range []string{"dact", "redacted", "<red", "acted>"} {
		red := Integration{}.Abilities().Redaction
		red.Request(cmd("AUTH", s))
		once, _ := red.Reply(nil, []byte(bulk("x"+s+"x")))
		twice, note := red.Reply(nil, once)
		if string(twice) != string(once) || note != "" {
			t.Errorf("secret %q: redacted %q, then again %q (%q)", s, once, twice, note)
		}
		if again, note := red.Reply(nil, []byte(bulk(Redacted))); string(again) != bulk(Redacted) || note != "" {
			t.Errorf("secret %q: the marker redacted to %q", s, again)
		}
	}
}

// TestRedactionSeenConcurrent: connections teach and redact at once
// (run with -race); each secret taught before a request is redacted in
// it.
func TestRedactionSeenConcurrent(t *testing.T) {
	red := Integration{}.Abilities().Redaction
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pw := fmt.Sprintf("conn-%d-password", i)
			red.Request(cmd("AUTH", pw))
			for range 50 {
				if out, _ := red.Request(cmd("SET", "k", "v"+pw)); strings.Contains(string(out), pw) {
					errs <- string(out)
				}
				if out, _ := red.Reply(nil, []byte(bulk(pw))); strings.Contains(string(out), pw) {
					errs <- string(out)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("a seen secret survived: %q", e)
	}
}

func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

// BenchmarkRedactionSeen is what redacting costs a recording that has
// seen two secrets: a request and a reply that hold none (the common
// case), and ones that hold one. Run with
// go test -run XXX -bench RedactionSeen -benchmem ./integrations/redis
func BenchmarkRedactionSeen(b *testing.B) {
	red := Integration{}.Abilities().Redaction
	red.Request(cmd("AUTH", "first-password"))
	red.Request(cmd("ACL", "SETUSER", "alice", ">second-password"))
	value := strings.Repeat("v", 100)
	for _, bc := range []struct {
		name       string
		req, reply []byte
	}{
		{"none", cmd("SET", "user:1", value), []byte(bulk(value))},
		{"held", cmd("SET", "user:1", value+"first-password"), []byte(bulk(value + "first-password"))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				red.Request(bc.req)
				red.Reply(nil, bc.reply)
			}
		})
	}
}
