package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/internal/syncbuf"
	"github.com/kavach-dev/kavach/mcpserver"
)

// wire is `kavach mcp` run as a process with the SDK's client on its
// stdio, and the test able to put its own lines on the same stdin and see
// every line either side writes. Lines the server writes that the client
// did not ask for (errors with id null, answers to the test's own lines,
// whose ids are strings "raw-...") go to the test only.
type wire struct {
	cmd     *exec.Cmd
	session *mcp.ClientSession
	stderr  syncbuf.Buffer

	wmu   sync.Mutex
	stdin io.WriteCloser

	mu        sync.Mutex
	sent      []string // lines the client sent
	orphans   []string // server lines answering no request
	responses []string // server lines answering a request
	notes     []string // server notifications
	changed   chan struct{}
}

type lockedWriteFunc func([]byte) (int, error)

func (f lockedWriteFunc) Write(p []byte) (int, error) { return f(p) }
func (f lockedWriteFunc) Close() error                { return nil }

func startWire(t *testing.T, ctx context.Context, dir string) *wire {
	t.Helper()
	bin, err := exec.LookPath("kavach")
	if err != nil {
		t.Fatal(err)
	}
	w := &wire{changed: make(chan struct{}, 1)}
	w.cmd = exec.Command(bin, "mcp")
	w.cmd.Dir = dir
	w.cmd.Stderr = &w.stderr
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toClient, fromServer := io.Pipe()
	go func() {
		defer fromServer.Close()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := sc.Text()
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal([]byte(line), &m)
			w.mu.Lock()
			switch {
			case m.Method != "":
				w.notes = append(w.notes, line)
			case string(m.ID) == "null" || m.ID == nil || strings.HasPrefix(string(m.ID), `"raw-`):
				w.orphans = append(w.orphans, line)
			default:
				w.responses = append(w.responses, line)
			}
			w.mu.Unlock()
			select {
			case w.changed <- struct{}{}:
			default:
			}
			if m.Method != "" || (m.ID != nil && string(m.ID) != "null" && !strings.HasPrefix(string(m.ID), `"raw-`)) {
				if _, err := fromServer.Write([]byte(line + "\n")); err != nil {
					return
				}
			}
		}
	}()
	clientOut := lockedWriteFunc(func(p []byte) (int, error) {
		w.mu.Lock()
		w.sent = append(w.sent, strings.TrimSpace(string(p)))
		w.mu.Unlock()
		return w.write(p)
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "kavach-test", Version: "0"}, nil)
	w.session, err = client.Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.session.Close()
		w.stdin.Close()
		if err := w.cmd.Wait(); err != nil {
			t.Errorf("kavach mcp: %v; stderr:\n%s", err, w.stderr.String())
		}
		if t.Failed() {
			t.Logf("kavach mcp's stderr:\n%s", w.stderr.String())
		}
	})
	return w
}

func (w *wire) write(p []byte) (int, error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.stdin.Write(p)
}

// orphan sends a raw line and returns the server's answer to it, which
// answers no request the client made.
func (w *wire) orphan(t *testing.T, line string) map[string]any {
	t.Helper()
	w.mu.Lock()
	n := len(w.orphans)
	w.mu.Unlock()
	if _, err := w.write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	for {
		w.mu.Lock()
		if len(w.orphans) > n {
			got := w.orphans[n]
			w.mu.Unlock()
			var m map[string]any
			if err := json.Unmarshal([]byte(got), &m); err != nil {
				t.Fatalf("answer %q: %v", got, err)
			}
			return m
		}
		w.mu.Unlock()
		select {
		case <-w.changed:
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer to %.80q; stderr:\n%s", line, w.stderr.String())
		}
	}
}

// alive checks that the server still answers the client.
func (w *wire) alive(t *testing.T, ctx context.Context) {
	t.Helper()
	res, err := w.session.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 1 {
		t.Fatalf("after bad input, tools/list: %v %+v; stderr:\n%s", err, res, w.stderr.String())
	}
}

func errorOf(t *testing.T, m map[string]any) (code float64, msg string) {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok || m["jsonrpc"] != "2.0" {
		t.Fatalf("answer %v is not a JSON-RPC error", m)
	}
	code, _ = e["code"].(float64)
	msg, _ = e["message"].(string)
	return code, msg
}

// TestMCPBadInput: no input ends `kavach mcp` or makes it panic. Each bad
// line is answered with a JSON-RPC error and the session goes on.
func TestMCPBadInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := startWire(t, ctx, t.TempDir())

	t.Run("unknown tool", func(t *testing.T) {
		_, err := w.session.CallTool(ctx, &mcp.CallToolParams{Name: "kavach_grade", Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), `unknown tool "kavach_grade"`) || !strings.Contains(err.Error(), "Call kavach_diff with") {
			t.Errorf("unknown tool: %v; want a JSON-RPC error naming the tool and saying how to call kavach_diff", err)
		}
		w.alive(t, ctx)
	})
	t.Run("wrong argument type", func(t *testing.T) {
		res, err := w.session.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolName,
			Arguments: map[string]any{"old": "a", "new": "b", "fixture": "c", "variants": "many"}})
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "variants") {
			t.Errorf("variants \"many\": %v %+v; want a tool error about variants", err, res)
		}
		w.alive(t, ctx)
	})
	t.Run("out is an input", func(t *testing.T) {
		dir := t.TempDir()
		fixture := filepath.Join(dir, "incident.kavach")
		notes := filepath.Join(dir, "notes.txt")
		for _, f := range []string{fixture, notes} {
			if err := os.WriteFile(f, []byte("not to be replaced"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for out, want := range map[string]string{fixture: "is the fixture", "/bin/true": "is the new build", notes: "is not a Kavach report"} {
			res, err := w.session.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolName,
				Arguments: map[string]any{"old": "/bin/false", "new": "/bin/true", "fixture": fixture, "out": out}})
			if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, want) {
				t.Errorf("out %s: %v %+v; want a tool error saying it %s", out, err, res, want)
			}
		}
		for _, f := range []string{fixture, notes} {
			if b, _ := os.ReadFile(f); string(b) != "not to be replaced" {
				t.Errorf("%s was replaced: %q", f, b)
			}
		}
		w.alive(t, ctx)
	})
	t.Run("tool annotations", func(t *testing.T) {
		res, err := w.session.ListTools(ctx, nil)
		if err != nil || len(res.Tools) != 1 || res.Tools[0].Annotations == nil || res.Tools[0].Annotations.DestructiveHint == nil ||
			!*res.Tools[0].Annotations.DestructiveHint {
			t.Errorf("tools/list: %v %+v; want the tool declared destructive (it writes its report to out)", err, res)
		}
	})
	t.Run("errors never quote a file", func(t *testing.T) {
		// A file the caller could not read itself, given as the fixture or
		// the invariants: the answer names it and says why, and holds
		// none of its bytes.
		dir := t.TempDir()
		shadow := filepath.Join(dir, "shadow")
		const secret = "SECRETHASHxyz"
		if err := os.WriteFile(shadow, []byte("root:$6$"+secret+":19000:0:99999:7:::\ndaemon:*:19000\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		fixture := filepath.Join(dir, "f.kavach")
		data, err := sampleFixture("resp", true, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fixture, data, 0o644); err != nil {
			t.Fatal(err)
		}
		build := filepath.Join(dir, "build.sh") // a script: not looked into
		if err := os.WriteFile(build, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, args := range []map[string]any{
			{"old": build, "new": build, "fixture": shadow},
			{"old": build, "new": build, "fixture": fixture, "invariants": shadow},
		} {
			res, err := w.session.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: args})
			if err != nil || !res.IsError {
				t.Errorf("%v: %v %+v; want a tool error", args, err, res)
				continue
			}
			text := res.Content[0].(*mcp.TextContent).Text
			t.Logf("%s", text)
			if strings.Contains(text, "root") || strings.Contains(text, secret) || !strings.Contains(text, shadow) {
				t.Errorf("%v: answered %q; want the file named, none of its bytes", args, text)
			}
		}
		w.alive(t, ctx)
	})
	for _, tc := range []struct {
		name, line string
		code       float64
		want       string
		id         any
	}{
		{"not JSON", "hello, kavach", -32700, "not JSON", nil},
		{"cut JSON", `{"jsonrpc": "2.0", "id": "raw-7", "method": "tools/li`, -32700, "not JSON", "raw-7"},
		{"not JSON-RPC", `{"id": "raw-8", "method": "tools/list"}`, -32600, "invalid", "raw-8"},
		{"unknown method", `{"jsonrpc": "2.0", "id": "raw-11", "method": "tools/grade"}`, -32601, "tools/grade", "raw-11"},
		{"bad params", `{"jsonrpc": "2.0", "id": "raw-12", "method": "tools/call", "params": [1, 2]}`, -32602, "", "raw-12"},
		{"bad id", `{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}`, -32600, "invalid", nil},
		{"a number", `42`, -32600, "invalid", nil},
		{"batch", `[{"jsonrpc": "2.0", "id": 9, "method": "tools/list"}]`, -32600, "batches are not supported", nil},
		{"huge line", `{"jsonrpc": "2.0", "id": "raw-10", "method": "tools/list", "params": {"x": "` + strings.Repeat("x", 3<<20) + `"}}`,
			-32600, "longer than", "raw-10"},
		{"huge method", `{"jsonrpc": "2.0", "id": "raw-13", "method": "` + strings.Repeat("ü", 300_000) + `"}`, -32601, "… (600002 bytes)", "raw-13"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := w.orphan(t, tc.line)
			code, msg := errorOf(t, m)
			if code != tc.code || !strings.Contains(msg, tc.want) {
				t.Errorf("answer %.600v: want code %v, a message saying %q", m, tc.code, tc.want)
			}
			if m["id"] != tc.id {
				t.Errorf("answer's id %v, want %v", m["id"], tc.id)
			}
			if len(msg) > 1000 {
				t.Errorf("answer's message is %d bytes: what the client sent is echoed whole", len(msg))
			}
			w.alive(t, ctx)
		})
	}
	// Arguments out of bounds are refused in a person's words, with the
	// bounds the tool itself holds: a timeout of 0 ms is refused by the
	// schema, not by the grading.
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"negative variants", map[string]any{"variants": -5}, `"variants" is -5: need 0 or more`},
		{"zero step timeout", map[string]any{"step_timeout_ms": 0}, `"step_timeout_ms" is 0: need 1 or more`},
		{"zero start timeout", map[string]any{"start_timeout_ms": 0}, `"start_timeout_ms" is 0: need 1 or more`},
		{"a fraction", map[string]any{"jobs": 2.5}, `"jobs" is a number (2.5): need an integer`},
		{"huge wrong type", map[string]any{"seed": strings.Repeat("é", 450_000)}, `"seed" is a string (éé`},
		{"huge path", map[string]any{"old": strings.Repeat("p", 900<<10)}, `"old": ppp`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"old": "old", "new": "new", "fixture": "f.kavach"}
			for k, v := range tc.args {
				args[k] = v
			}
			res, err := w.session.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: args})
			if err != nil || !res.IsError {
				t.Fatalf("%v %+v: want a tool error", err, res)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !strings.Contains(text, tc.want) || strings.Contains(text, "0.000000") || !utf8.ValidString(text) {
				t.Errorf("error %.600q, want it to say %q", text, tc.want)
			}
			if len(text) > 2000 {
				t.Errorf("error is %d bytes: the argument is echoed whole", len(text))
			}
		})
	}
}

// TestMCPPipedThenClosed: requests piped in, then stdin closed, are all
// answered before kavach mcp exits: the SDK alone drops the answers still
// being made when the input ends.
func TestMCPPipedThenClosed(t *testing.T) {
	bin, err := exec.LookPath("kavach")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "mcp")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}}}`,
		`{"jsonrpc": "2.0", "method": "notifications/initialized"}`,
		`{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "kavach_grade", "arguments": {}}}`,
		`hello, kavach`,
		`{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}`,
		`{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "kavach_diff", "arguments": {"old": "old", "new": "new", "fixture": "f.kavach"}}}`,
	}, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kavach mcp: %v; stderr:\n%s", err, stderr.String())
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got[string(m.ID)] = l
	}
	// The schema says where relative paths resolve, and holds the
	// tool's own bounds: a timeout from 1 ms.
	if l := got["3"]; strings.Count(l, "a relative path is taken from the working directory kavach mcp was started in") < 6 ||
		!strings.Contains(l, `"step_timeout_ms":{"type":"integer","description":"a step with no reply within this many milliseconds hangs","default":5000,"minimum":1}`) {
		t.Errorf("tools/list: %.3000s\nwant each path's description to say how a relative one resolves, and step_timeout_ms from 1", l)
	}
	for id, want := range map[string]string{"1": `"serverInfo"`, "2": `unknown tool`, "null": `not JSON`, "3": `"kavach_diff"`,
		"4": `old does not exist (relative paths are taken from kavach's working directory, ` + dir + `)`} {
		if !strings.Contains(got[id], want) {
			t.Errorf("answer to %s: %.200q, want one saying %q; all:\n%s", id, got[id], want, out)
		}
	}
}

// TestMCPCancel: a call the client cancels stops its grading (its builds
// stopped) and gets no response, as MCP's cancellation says; the server
// goes on.
func TestMCPCancel(t *testing.T) {
	old := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...)
	pristine := redisbuild.MustBuild(t)
	dir := t.TempDir()
	fixture := filepath.Join(dir, "getrange.kavach")
	if err := incidents.RecordGetrange(fixture, old); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := startWire(t, ctx, dir)

	callCtx, stopCall := context.WithCancel(ctx)
	params := &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"old": old, "new": pristine, "fixture": fixture, "variants": 64, "jobs": 1}}
	params.SetProgressToken("cancel-me")
	done := make(chan error, 1)
	go func() {
		_, err := w.session.CallTool(callCtx, params)
		done <- err
	}()
	// Cancel once a replay has run: the grading is under way.
	var id json.RawMessage
	for id == nil {
		select {
		case <-w.changed:
		case <-time.After(60 * time.Second):
			t.Fatal("no progress from the grading")
		}
		w.mu.Lock()
		for _, l := range w.sent {
			if strings.Contains(l, `"cancel-me"`) && strings.Contains(l, `"tools/call"`) {
				var m struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.Unmarshal([]byte(l), &m)
				id = m.ID
			}
		}
		w.mu.Unlock()
	}
	for !progressed(w) {
		select {
		case <-w.changed:
		case <-time.After(60 * time.Second):
			t.Fatal("no progress from the grading")
		}
	}
	stopCall()
	if err := <-done; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	// The grading's builds stop.
	deadline := time.Now().Add(30 * time.Second)
	for {
		kids := children(w.cmd.Process.Pid)
		if len(kids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("builds still running after the call was cancelled: %v", kids)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.alive(t, ctx)
	// The handler has returned by now (its builds are stopped, and the
	// server answered since); no response to the cancelled call was sent.
	w.alive(t, ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.responses {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal([]byte(l), &m)
		if string(m.ID) == string(id) {
			t.Errorf("a response to the cancelled call %s was sent: %s", id, l)
		}
	}
}

func progressed(w *wire) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.notes {
		if strings.Contains(n, `"notifications/progress"`) && strings.Contains(n, `"cancel-me"`) {
			return true
		}
	}
	return false
}

// children lists the live processes whose parent is pid.
func children(pid int) []string {
	var kids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 && f[0] != "Z" && f[1] == strconv.Itoa(pid) {
			kids = append(kids, e.Name())
		}
	}
	return kids
}
