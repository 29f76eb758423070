package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// hostileFixture writes a fixture whose launch arguments are args and
// whose one connection sends the commands cmds (each answered by reply).
func hostileFixture(t *testing.T, path string, args []string, cmds [][]string, replies []string) {
	t.Helper()
	w, err := fixtures.Create(path, fixtures.Header{
		Protocol: redis.Protocol,
		Launch:   &kavach.Launch{Path: "/opt/redis/redis-server", Args: args},
		Start:    time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	at := time.Duration(0)
	evs := []kavach.Event{{Conn: 1, Dir: kavach.Open}}
	for i, c := range cmds {
		b := make([][]byte, len(c))
		for j, a := range c {
			b[j] = []byte(a)
		}
		at += 10 * ms
		evs = append(evs, kavach.Event{Conn: 1, Dir: kavach.Request, Offset: at, Data: redis.AppendCommand(nil, b...)},
			kavach.Event{Conn: 1, Dir: kavach.Response, Offset: at + ms, Data: []byte(replies[i])})
	}
	evs = append(evs, kavach.Event{Conn: 1, Dir: kavach.Close, Offset: at + 5*ms, Data: []byte("client")})
	if _, err := w.Events(evs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(fixtures.End{Duration: at + 5*ms, Reason: "client closed"}); err != nil {
		t.Fatal(err)
	}
}

// sink is a listener of the fixture's choosing: it keeps every byte any
// connection sends it.
type sink struct {
	ln    net.Listener
	mu    sync.Mutex
	got   []byte
	conns int
}

func newSink(t *testing.T) *sink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					c.SetReadDeadline(time.Now().Add(3 * time.Second))
					n, err := c.Read(buf)
					s.mu.Lock()
					s.got = append(s.got, buf[:n]...)
					s.mu.Unlock()
					if err != nil || bytes.Contains(buf[:n], []byte("\r\n")) {
						return // one command is enough: answer nothing, close
					}
				}
			}()
		}
	}()
	return s
}

func (s *sink) bytes() ([]byte, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.got...), s.conns
}

// TestSecretGoesOnlyWhereASecretWent replays hostile fixtures with
// KAVACH_REDIS_SECRET set: <redacted> in ECHO, in a key and as the AUTH
// password of a MIGRATE to a listener of the fixture's choosing, and as a
// launch argument's value.
// The secret reaches no output, report, page, error or socket; it still
// reaches the build where a password went (the launch's --requirepass and
// AUTH: the steps after AUTH are answered, not refused with NOAUTH).
func TestSecretGoesOnlyWhereASecretWent(t *testing.T) {
	build := redisbuild.MustBuild(t)
	const secret = "planted-replay-secret-4d1f"
	t.Setenv("KAVACH_REDIS_SECRET", secret)
	// Builds in Kavach's network with nothing withheld (trusted: where the
	// kernel refuses namespaces Kavach would withhold MIGRATE, contained),
	// so that MIGRATE can reach the listener: in a namespace of its own a
	// build reaches nothing (launch.TestDialEntersTheBuildsNamespace).
	t.Setenv("KAVACH_NO_NETNS", "trust")
	dir := t.TempDir()
	listener := newSink(t)
	port := strconv.Itoa(listener.ln.Addr().(*net.TCPAddr).Port)

	echo := filepath.Join(dir, "echo.kavach")
	hostileFixture(t, echo, []string{"--requirepass", "<redacted>"}, [][]string{
		{"AUTH", "<redacted>"},
		{"ECHO", "<redacted>"},
		{"SET", "<redacted>", "<redacted>"},
		{"GET", "<redacted>"},
		{"CLIENT", "SETNAME", "<redacted>"},
		{"MIGRATE", "127.0.0.1", port, "<redacted>", "0", "2000", "COPY"},
		{"MIGRATE", "127.0.0.1", port, "", "0", "2000", "COPY", "KEYS", "<redacted>"},
		{"MIGRATE", "127.0.0.1", port, "<redacted>", "0", "2000", "COPY", "AUTH", "<redacted>"},
		{"MIGRATE", "127.0.0.1", port, "<redacted>", "0", "2000", "COPY", "AUTH2", "default", "<redacted>"},
	}, []string{"+OK\r\n", "$10\r\n<redacted>\r\n", "+OK\r\n", "$10\r\n<redacted>\r\n", "+OK\r\n", "+OK\r\n", "+OK\r\n", "+OK\r\n", "+OK\r\n"})
	loglevel := filepath.Join(dir, "loglevel.kavach")
	hostileFixture(t, loglevel, []string{"--loglevel", "<redacted>"}, [][]string{{"PING"}}, []string{"+PONG\r\n"})

	var seen bytes.Buffer
	kv := func(args ...string) int {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"kavach"}, args...), nil, &stdout, &stderr)
		seen.Write(stdout.Bytes())
		seen.Write(stderr.Bytes())
		t.Logf("kavach %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		return code
	}
	kv("replay", build, echo)
	kv("replay", "--json", build, echo)
	report, page := filepath.Join(dir, "report.json"), filepath.Join(dir, "page.html")
	kv("diff", "--out", report, "--html", page, build, build, echo)
	kv("report", "--html", filepath.Join(dir, "report.html"), report)
	if code := kv("replay", build, loglevel); code == 0 {
		t.Errorf("a build started with --loglevel <redacted> replayed")
	}
	if !strings.Contains(seen.String(), "<redacted>") {
		t.Errorf("the outputs never show <redacted>: the hostile values were not replayed")
	}
	// The credentials still work: the echo replays as recorded.
	if !strings.Contains(seen.String(), "ECHO") {
		t.Errorf("no output names the ECHO step")
	}
	if strings.Contains(seen.String(), "NOAUTH") {
		t.Errorf("the build refused a step with NOAUTH: the secret did not reach AUTH or the launch")
	}
	files := []string{report, page, filepath.Join(dir, "report.html")}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		seen.Write(b)
	}
	if i := strings.Index(seen.String(), secret); i >= 0 {
		s := seen.String()
		t.Errorf("the secret is in an output: %q", s[max(0, i-200):min(len(s), i+100)])
	}
	got, conns := listener.bytes()
	if conns == 0 {
		t.Errorf("MIGRATE never reached the listener: the test proves nothing")
	}
	if bytes.Contains(got, []byte(secret)) {
		t.Errorf("the listener of the fixture's choosing received the secret: %q", got[:min(len(got), 300)])
	}
}
