package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

func cmd(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return AppendCommand(nil, b...)
}

func TestReplies(t *testing.T) {
	for _, tt := range []struct {
		req  []byte
		want int
	}{
		{cmd("GET", "k"), 1},
		{cmd("SUBSCRIBE", "a", "b", "c"), 3},
		{cmd("psubscribe", "n*"), 1},
		{cmd("UNSUBSCRIBE"), 1},
		{[]byte("\r\n"), 0}, // an empty inline line gets no reply
		{[]byte("PING\r\n"), 1},
	} {
		if got := (Integration{}).Replies(tt.req); got != tt.want {
			t.Errorf("Replies(%q) = %d, want %d", tt.req, got, tt.want)
		}
	}
}

func TestIsPush(t *testing.T) {
	for _, tt := range []struct {
		resp string
		want bool
	}{
		{"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n", true},
		{">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n", true},
		{"*4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$1\r\nx\r\n", true},
		{">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n", true},
		{"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n", false}, // a reply to SUBSCRIBE
		{">3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n", false}, // RESP3: same, as a push frame
		{"*2\r\n$7\r\nmessage\r\n$1\r\nx\r\n", true},
		{"*2\r\n$4\r\njobs\r\n$2\r\nj1\r\n", false}, // a BLPOP reply
		{"+OK\r\n", false},
	} {
		if got := (Integration{}).IsPush([]byte(tt.resp)); got != tt.want {
			t.Errorf("IsPush(%q) = %v, want %v", tt.resp, got, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	c := Integration{}
	for _, tt := range []struct {
		resps []string
		want  string
	}{
		{[]string{"+OK\r\n"}, "ok"},
		{[]string{"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"}, "error:WRONGTYPE"},
		{[]string{"!21\r\nSYNTAX invalid syntax\r\n"}, "error:SYNTAX"},
		{[]string{"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n", "-ERR x\r\n"}, "error:ERR"}, // pushes skipped
		{[]string{"$-1\r\n"}, "ok"},
	} {
		var rs [][]byte
		for _, r := range tt.resps {
			rs = append(rs, []byte(r))
		}
		if got := c.Classify(nil, rs).String(); got != tt.want {
			t.Errorf("Classify(%q) = %s, want %s", tt.resps, got, tt.want)
		}
	}
}

func TestSplitResponseRejectsInline(t *testing.T) {
	_, err := Integration{}.SplitResponse([]byte("hello\r\n"))
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Offset != 0 {
		t.Fatalf("err = %v, want a protocol error at byte 0", err)
	}
	if n, err := (Integration{}).SplitResponse([]byte("+OK\r\n+OK")); n != 5 || err != nil {
		t.Fatalf("SplitResponse = %d, %v", n, err)
	}
}

func TestRedactAndUnredact(t *testing.T) {
	for _, tt := range []struct {
		req, want, note string
		credential      bool // a password the client presented: Unredact puts it back
	}{
		{"AUTH hunter2", `AUTH "<redacted>"`, "AUTH password", true},
		{"AUTH ada hunter2", `AUTH "ada" "<redacted>"`, "AUTH password", true},
		{"HELLO 3 AUTH ada hunter2 SETNAME x", `HELLO "3" "AUTH" "ada" "<redacted>" "SETNAME" "x"`, "HELLO AUTH password", true},
		{"MIGRATE h 6379 k 0 100 COPY AUTH hunter2", `MIGRATE "h" "6379" "k" "0" "100" "COPY" "AUTH" "<redacted>"`, "MIGRATE AUTH password", false},
		{"MIGRATE h 6379 k 0 100 AUTH2 ada hunter2", `MIGRATE "h" "6379" "k" "0" "100" "AUTH2" "ada" "<redacted>"`, "MIGRATE AUTH2 password", false},
		{"CONFIG SET maxmemory 1mb requirepass hunter2", `CONFIG "SET" "maxmemory" "1mb" "requirepass" "<redacted>"`, "CONFIG SET requirepass", false},
		{"config set masterauth hunter2", `CONFIG "set" "masterauth" "<redacted>"`, "CONFIG SET masterauth", false},
		{"ACL SETUSER ada on >hunter2 ~* +@all", `ACL "SETUSER" "ada" "on" "><redacted>" "~*" "+@all"`, "ACL SETUSER password rule", false},
		{"SET AUTH hunter2", `SET "AUTH" "hunter2"`, "", false},
		{"GET k", `GET "k"`, "", false},
	} {
		req := []byte(tt.req + "\r\n") // inline, as a person would type it
		out, note := Integration{}.Redact(req)
		if note != tt.note {
			t.Errorf("Redact(%q) note = %q, want %q", tt.req, note, tt.note)
		}
		if got := (Integration{}).DescribeRequest(out, 0); got != tt.want {
			t.Errorf("Redact(%q) = %s, want %s", tt.req, got, tt.want)
		}
		if note == "" {
			if string(out) != string(req) {
				t.Errorf("Redact(%q) changed a request with no secret", tt.req)
			}
			continue
		}
		back := Unredact(out, "hunter2")
		c, _ := ParseCommand(back)
		orig, _ := ParseCommand(req)
		if tt.credential && c.String() != orig.String() {
			t.Errorf("Unredact(Redact(%q)) = %s", tt.req, c)
		}
		if !tt.credential && string(back) != string(out) {
			t.Errorf("Unredact(%q) = %q: only a credential gets the secret", out, back)
		}
	}
}

// TestUnredactOnlyCredentials: a fixture's <redacted> anywhere but where a
// client presented a password stays a literal, so the operator's secret is
// never echoed, stored or sent on.
func TestUnredactOnlyCredentials(t *testing.T) {
	for _, req := range []string{
		"ECHO <redacted>",
		"SET <redacted> <redacted>",
		"AUTH <redacted> x",
		"CONFIG SET requirepass <redacted>",
		"ACL SETUSER bob on ><redacted>",
		"HELLO 3 SETNAME <redacted>",
		"HELLO 3 SETNAME AUTH a <redacted>",
		"MIGRATE 127.0.0.1 6380 <redacted> 0 1000",
		"MIGRATE 127.0.0.1 6380 \"\" 0 1000 KEYS <redacted>",
		"MIGRATE 127.0.0.1 6380 \"\" 0 1000 KEYS AUTH <redacted>",
		"MIGRATE 127.0.0.1 6380 k 0 1000 AUTH <redacted>",
		"MIGRATE 127.0.0.1 6380 k 0 1000 AUTH2 u <redacted>",
		"CLIENT SETNAME <redacted>",
		"EVAL \"return ARGV[1]\" 0 <redacted>",
	} {
		out := Unredact([]byte(req+"\r\n"), "S3cret")
		if bytes.Contains(out, []byte("S3cret")) {
			t.Errorf("Unredact(%q) = %q: the secret went where no password was", req, out)
		}
	}
	for req, want := range map[string]string{
		"AUTH <redacted>":                       `AUTH "S3cret"`,
		"AUTH bob <redacted>":                   `AUTH "bob" "S3cret"`,
		"HELLO 3 SETNAME x AUTH bob <redacted>": `HELLO "3" "SETNAME" "x" "AUTH" "bob" "S3cret"`,
	} {
		if got := (Integration{}).DescribeRequest(Unredact([]byte(req+"\r\n"), "S3cret"), 0); got != want {
			t.Errorf("Unredact(%q) = %s, want %s", req, got, want)
		}
	}
}

func redisServer(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (make test installs it): %v", err)
	}
	return path
}

func TestLauncherRealRedis(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t), Args: []string{"--maxmemory", "10mb"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if v := (Integration{}).Version(context.Background(), p.Addr()); !strings.HasPrefix(v, "redis 7.") {
		t.Errorf("Version = %q", v)
	}
	// A stopped command asks nothing: every question to the build takes
	// the command's context.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if v := (Integration{}).Version(done, p.Addr()); v != "" {
		t.Errorf("Version on a cancelled context = %q, want none", v)
	}
	if _, err := (Integration{}).Learn(done, p.Addr(), []string{"GET"}); err == nil {
		t.Error("Learn on a cancelled context: no error")
	}
	if keys, _, _ := (Integration{}).Keys(done, p.Addr(), [][]byte{AppendCommand(nil, []byte("GET"), []byte("k"))}); keys[0] != nil {
		t.Errorf("Keys on a cancelled context = %q, want unknown", keys)
	}
	sp := p.(*launch.Spawned)
	dir := sp.Dir()
	exit := p.Stop()
	if exit == nil || exit.Status != 0 || exit.Signal != "" {
		t.Errorf("SHUTDOWN NOSAVE gave %+v, want a clean exit", exit)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("build dir %s left behind", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err == nil {
		t.Error("persistence was on: dump.rdb written")
	}
}

func TestLauncherBuildDiesAtStartup(t *testing.T) {
	_, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t), Args: []string{"--no-such-option", "1"}})
	var se *launch.StartError
	if !errors.As(err, &se) || se.Exit == nil || se.Exit.Status == 0 {
		t.Fatalf("err = %v, want a StartError with a failed exit", err)
	}
	if !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "no-such-option") {
		t.Errorf("error lacks the evidence: %v", err)
	}
}

func TestLauncherNeverReady(t *testing.T) {
	// A "build" that runs but never answers PING: stopped, with evidence.
	path := filepath.Join(t.TempDir(), "fake-redis")
	os.WriteFile(path, []byte("#!/bin/sh\necho starting\nexec sleep 100\n"), 0o755)
	start := time.Now()
	_, err := Integration{StartTimeout: 300 * time.Millisecond}.Start(context.Background(), kavach.Launch{Path: path})
	if err == nil || !strings.Contains(err.Error(), "never became ready within 300ms") || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %s to give up", time.Since(start))
	}
}

func TestPeekName(t *testing.T) {
	for _, tt := range []struct {
		frame string
		name  string
		ok    bool
	}{
		{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "GET", true},
		{"*1\r\n$9\r\nsubscribe\r\n", "subscribe", true},
		{"PING\r\n", "", false},
		{"*1\r\n$99\r\nGET\r\n", "", false},
		{"*1\r\n$-1\r\n", "", false},
		{"*1\r\n:1\r\n", "", false},
	} {
		name, ok := peekName([]byte(tt.frame))
		if string(name) != tt.name || ok != tt.ok {
			t.Errorf("peekName(%q) = %q, %v; want %q, %v", tt.frame, name, ok, tt.name, tt.ok)
		}
	}
}

// FuzzPeekName: peekName never panics, and when it names a command it
// names the one ParseCommand finds.
func FuzzPeekName(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		name, ok := peekName(data)
		if !ok {
			return
		}
		n, err := Split(data)
		if err != nil || n != len(data) {
			return
		}
		c, err := ParseCommand(data)
		if err == nil && !strings.EqualFold(c.Name, string(name)) {
			t.Fatalf("peekName(%q) = %q, ParseCommand says %q", data, name, c.Name)
		}
	})
}

func TestWrites(t *testing.T) {
	for _, tt := range []struct {
		req   string
		keys  string
		value string // "-" for none
	}{
		{"SET k v EX 10", "[k]", "v"},
		{"SETEX k 10 v", "[k]", "v"},
		{"APPEND k x", "[k]", "-"},
		{"DEL a b c", "[a b c]", "-"},
		{"MSET a 1 b 2", "[a b]", "-"},
		{"MSET a 1", "[a]", "1"},
		{"RENAME a b", "[a b]", "-"},
		{"GET k", "[]", "-"},
		{"HSET h f v", "[h]", "-"},
		{"EXPIRE k 100", "[]", "-"},
		{"EXPIRE k 0", "[k]", "-"},
		{"PEXPIRE k -5", "[k]", "-"},
	} {
		keys, v := Integration{}.Writes([]byte(tt.req + "\r\n"))
		val := "-"
		if v != nil {
			val = *v
		}
		if fmt.Sprint(keys) != tt.keys || val != tt.value {
			t.Errorf("Writes(%s) = %v, %s; want %s, %s", tt.req, keys, val, tt.keys, tt.value)
		}
	}
	if m := (Integration{}).Inspect([]byte("get k\r\n")); fmt.Sprint(m) != "map[args:[k] command:GET]" {
		t.Errorf("Inspect = %v", m)
	}
}
