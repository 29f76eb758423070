package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
)

func TestParseMonitorLine(t *testing.T) {
	cases := []struct {
		line   string
		db     int
		origin string
		args   []string
	}{
		{`1796461511.979482 [0 127.0.0.1:55514] "set" "a" "1"`, 0, "127.0.0.1:55514", []string{"set", "a", "1"}},
		{`1796461512.008841 [3 lua] "incr" "a"`, 3, "lua", []string{"incr", "a"}},
		{`1.000001 [0 [::1]:6379] "GET" "k"`, 0, "[::1]:6379", []string{"GET", "k"}},
		{`1.5 [0 unix:/tmp/r.sock] "SET" "a b" "x\"y\\z\r\n\t\a\b\x00\xff"`, 0, "unix:/tmp/r.sock", []string{"SET", "a b", "x\"y\\z\r\n\t\a\b\x00\xff"}},
		{`1.0 [0 127.0.0.1:1] "SET" "k" ""`, 0, "127.0.0.1:1", []string{"SET", "k", ""}},
		{`1.0 [0 127.0.0.1:1] "ECHO" "] \""`, 0, "127.0.0.1:1", []string{"ECHO", `] "`}},
	}
	for _, c := range cases {
		ml, err := ParseMonitorLine([]byte(c.line))
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		if ml.DB != c.db || ml.Origin != c.origin || len(ml.Args) != len(c.args) {
			t.Errorf("%s: got db %d origin %q args %q", c.line, ml.DB, ml.Origin, ml.Args)
			continue
		}
		for i, a := range c.args {
			if string(ml.Args[i]) != a {
				t.Errorf("%s: arg %d = %q, want %q", c.line, i, ml.Args[i], a)
			}
		}
	}
	if ml, _ := ParseMonitorLine([]byte(cases[0].line)); ml.Time.UnixMicro() != 1796461511979482 {
		t.Errorf("time %v", ml.Time)
	}
	for _, bad := range []string{``, `1.0`, `1.0 [0 x]`, `x.0 [0 a:1] "a"`, `1.0 [z a:1] "a"`, `1.0 [0 a:1] "a`, `1.0 [0 a:1] "a\x1"`,
		`1.0 [0 a:1] "a""b"`, `1.0 [0 a:1] "a\`, `1.0 [0 ] "a"`, `1.9999999 [0 a:1] "a"`} {
		if _, err := ParseMonitorLine([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzParseMonitorLine: any bytes give a line or an error, never a panic;
// a line's arguments quoted back as the service quotes them parse to the
// same arguments.
func FuzzParseMonitorLine(f *testing.F) {
	f.Add([]byte(`1796461511.979482 [0 127.0.0.1:55514] "set" "a" "1"`))
	f.Add([]byte(`1.5 [0 unix:/tmp/r.sock] "SET" "a b" "x\"y\\z\r\n\t\a\b\x00\xff"`))
	f.Add([]byte(`1.0 [0 a:1] "a\x1"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ml, err := ParseMonitorLine(b)
		if err != nil {
			return
		}
		line := "1.0 [0 o:1]"
		for _, a := range ml.Args {
			line += " " + quoteRepr(a)
		}
		again, err := ParseMonitorLine([]byte(line))
		if err != nil {
			t.Fatalf("%q quoted back as %q: %v", b, line, err)
		}
		if len(again.Args) != len(ml.Args) {
			t.Fatalf("%q: %d args, quoted back %d", b, len(ml.Args), len(again.Args))
		}
		for i := range ml.Args {
			if string(again.Args[i]) != string(ml.Args[i]) {
				t.Fatalf("%q: arg %d %q, quoted back %q", b, i, ml.Args[i], again.Args[i])
			}
		}
	})
}

// quoteRepr quotes b as the service's sdscatrepr does.
func quoteRepr(b []byte) string {
	var s strings.Builder
	s.WriteByte('"')
	for _, c := range b {
		switch c {
		case '\\', '"':
			s.WriteByte('\\')
			s.WriteByte(c)
		case '\n':
			s.WriteString(`\n`)
		case '\r':
			s.WriteString(`\r`)
		case '\t':
			s.WriteString(`\t`)
		case '\a':
			s.WriteString(`\a`)
		case '\b':
			s.WriteString(`\b`)
		default:
			if c < 32 || c > 126 {
				s.WriteString(`\x` + strings.ToLower(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
			} else {
				s.WriteByte(c)
			}
		}
	}
	s.WriteByte('"')
	return s.String()
}

// TestWatcherOnARealServer: the feed of Debian's redis-server, read as a
// recording reads it: who ran what, which commands write, where the keys
// are, the commands a script ran given to its caller, and the snapshot's
// mark where Snapshot puts it.
func TestWatcherOnARealServer(t *testing.T) {
	addr := startDebian(t, kavach.Launch{}).Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := NewWatcher(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	origin := c.conn.LocalAddr().String()
	for _, cmd := range [][]string{{"SET", "a", "1"}, {"GET", "a"}, {"EVAL", "redis.call('set', KEYS[1], 'x'); return 1", "1", "b"}, {"BLPOP", "q", "0.01"}} {
		if _, err := c.do(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	var sink strings.Builder
	if _, err := Snapshot(ctx, addr, &sink); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		cmd                     string
		write, script, blocking bool
		mark                    bool
		keys                    string
	}{
		{cmd: "SET a 1", write: true, keys: "a"},
		{cmd: "GET a"}, // a read: its keys are not asked
		{cmd: "EVAL"},
		{cmd: "set b x", write: true, script: true, keys: "b"},
		{cmd: "BLPOP q 0.01", write: true, blocking: true, keys: "q"},
		{cmd: "ECHO " + SnapshotMark, mark: true},
	}
	for i, wt := range want {
		r, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		for r.Origin != origin && !r.Mark {
			if r, err = w.Next(); err != nil {
				t.Fatal(err)
			}
		}
		got := describe(r.Request)
		if !strings.HasPrefix(got, wt.cmd) || r.Write != wt.write || r.Script != wt.script || r.Blocking != wt.blocking || r.Mark != wt.mark {
			t.Errorf("line %d: %q write=%v script=%v blocking=%v mark=%v, want %+v", i, got, r.Write, r.Script, r.Blocking, r.Mark, wt)
		}
		if keys := joinKeys(r.Keys); !wt.mark && (keys != wt.keys || r.KeysKnown != (wt.keys != "")) {
			t.Errorf("line %d (%s): keys %q known=%v, want %q", i, got, keys, r.KeysKnown, wt.keys)
		}
		if !wt.script && !wt.mark && !r.Same(r.Request) {
			t.Errorf("line %d: not the same as its own request", i)
		}
	}
	if keys, known := w.Keys(AppendCommand(nil, []byte("MSET"), []byte("x"), []byte("1"), []byte("y"), []byte("2"))); !known || joinKeys(keys) != "x y" {
		t.Errorf("Keys(MSET x 1 y 2) = %q, %v", joinKeys(keys), known)
	}
	if _, known := w.Keys(AppendCommand(nil, []byte("FLUSHALL"))); known {
		t.Error("FLUSHALL's keys known")
	}
}

func describe(req []byte) string {
	c, err := ParseCommand(req)
	if err != nil {
		return err.Error()
	}
	parts := make([]string, len(c.Args))
	for i, a := range c.Args {
		parts[i] = string(a)
	}
	return strings.Join(parts, " ")
}

func joinKeys(keys [][]byte) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = string(k)
	}
	return strings.Join(parts, " ")
}

var _ kavach.Watcher = (*Watcher)(nil)
