package grade

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/replay"
)

// replayKey tells apart every input a replay depends on, and refuses the
// replays a Memo must not keep.
func TestReplayKey(t *testing.T) {
	dir := t.TempDir()
	build, script := filepath.Join(dir, "build"), filepath.Join(dir, "wrap.sh")
	if err := os.WriteFile(build, []byte("\x7fELF\x02\x01\x01"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec redis-server \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := kavach.Launch{Path: build, Args: []string{"--port", "1"}}
	events := []kavach.Event{
		{Seq: 1, Conn: 1, Dir: kavach.Open},
		{Seq: 2, Conn: 1, Dir: kavach.Request, Data: []byte("*1\r\n$4\r\nPING\r\n")},
		{Seq: 3, Conn: 1, Dir: kavach.Response, Data: []byte("+PONG\r\n")},
	}
	ropts := replay.Options{Integration: redis.Integration{}, StepTimeout: time.Second, Start: time.Unix(1, 0)}
	base, ok := replayKey("fixture", l, events, ropts)
	if !ok {
		t.Fatal("a plain replay is not remembered")
	}
	if again, _ := replayKey("fixture", l, events, ropts); again != base {
		t.Fatal("the same replay has two keys")
	}
	other := func(name string, l kavach.Launch, events []kavach.Event, ropts replay.Options) {
		t.Helper()
		k, ok := replayKey("fixture", l, events, ropts)
		if ok && k == base {
			t.Errorf("%s: same key as the replay it differs from", name)
		}
	}
	changed := func(f func(e []kavach.Event)) []kavach.Event {
		c := append([]kavach.Event(nil), events...)
		f(c)
		return c
	}
	if k, _ := replayKey("another fixture", l, events, ropts); k == base {
		t.Error("another fixture's header: same key")
	}
	other("an argument", kavach.Launch{Path: build, Args: []string{"--port", "2"}}, events, ropts)
	other("the environment", kavach.Launch{Path: build, Args: l.Args, Env: []string{"A=1"}}, events, ropts)
	other("a request", l, changed(func(e []kavach.Event) { e[1].Data = []byte("*1\r\n$4\r\nINFO\r\n") }), ropts)
	other("an offset", l, changed(func(e []kavach.Event) { e[1].Offset = time.Millisecond }), ropts)
	other("a connection", l, changed(func(e []kavach.Event) { e[1].Conn, e[2].Conn = 2, 2 }), ropts)
	prepared := ropts
	prepared.Prepare = func(b []byte) []byte { return bytes.ToLower(b) }
	other("the requests as sent", l, events, prepared)
	shifted := ropts
	shifted.Shift = func(step int) time.Duration { return time.Duration(step) * time.Second }
	other("the clock's shift", l, events, shifted)
	timeout := ropts
	timeout.StepTimeout = 2 * time.Second
	other("the step timeout", l, events, timeout)
	perturbed := ropts
	perturbed.Perturb = true
	other("perturbed", l, events, perturbed)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(build, later, later); err != nil {
		t.Fatal(err)
	}
	other("the build's file", l, events, ropts)

	for name, o := range map[string]replay.Options{
		"fingerprinting": {Inputs: &replay.Inputs{}},
		"a seeded state": {Seed: &kavach.Seed{}},
	} {
		if _, ok := replayKey("fixture", l, events, o); ok {
			t.Errorf("%s: remembered", name)
		}
	}
	if _, ok := replayKey("fixture", kavach.Launch{Path: filepath.Join(t.TempDir(), "none")}, events, ropts); ok {
		t.Error("a build with no file: remembered")
	}
	if _, ok := replayKey("fixture", kavach.Launch{Path: script}, events, ropts); ok {
		t.Error("a wrapper script: remembered")
	}
}
