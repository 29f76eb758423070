package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// TestShowEscapesHeaderFields: a fixture's header fields reach the
// terminal with their control characters escaped: no escape sequence a
// hostile fixture planted is printed raw.
func TestShowEscapesHeaderFields(t *testing.T) {
	const esc = "\x1b]0;pwned\x07\x1b[2J\u009b31m"
	path := filepath.Join(t.TempDir(), "hostile.kavach")
	w, err := fixtures.Create(path, fixtures.Header{
		Protocol: redis.Protocol,
		Build:    &fixtures.Build{Path: "/opt/redis" + esc, SHA256: "ab" + esc, Version: "7.0" + esc},
		Launch:   &kavach.Launch{Path: "/opt/redis" + esc, Args: []string{"--hz", "10" + esc}},
		Start:    time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Events([]kavach.Event{{Conn: 1, Dir: kavach.Open}, {Conn: 1, Dir: kavach.Request, Data: []byte("*1\r\n$4\r\nPING\r\n")},
		{Conn: 1, Dir: kavach.Response, Data: []byte("+PONG\r\n")}})
	if err := w.Failure(kavach.Failure{Step: 1, Oracle: kavach.Oracle{Kind: kavach.Error, Class: "ERR" + esc}, Signature: "error:ERR" + esc,
		Evidence: "bad" + esc}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(fixtures.End{Reason: "client closed"}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"show", path}, {"show", path, "--step", "1"}} {
		var stdout, stderr bytes.Buffer
		run(context.Background(), append([]string{"kavach"}, args...), nil, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if strings.ContainsAny(out, "\x1b\x07\u009b") {
			t.Errorf("kavach %s printed a control character raw:\n%q", strings.Join(args, " "), out)
		}
		if !strings.Contains(out, `\x1b]0;pwned`) {
			t.Errorf("kavach %s does not show the escaped field:\n%s", strings.Join(args, " "), out)
		}
	}
}
