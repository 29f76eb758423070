package redis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
)

// syncServer is a fake service whose reply to SYNC is reply (REPLCONF is
// answered +OK), then it closes the connection.
func syncServer(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		var buf []byte
		skip := 0 // CLIENT REPLY SKIP: no reply to it, nor to the next command
		for {
			b, err := r.ReadByte()
			if err != nil {
				return
			}
			buf = append(buf, b)
			if n, _ := Split(buf); n > 0 {
				cmd, _ := ParseCommand(buf[:n])
				buf = buf[n:]
				if cmd.Name == "SYNC" {
					c.Write([]byte(reply))
					return
				}
				if cmd.Name == "CLIENT" && len(cmd.Args) == 3 && strings.EqualFold(string(cmd.Args[2]), "SKIP") {
					skip = 2
				}
				if skip > 0 {
					skip--
					continue
				}
				c.Write([]byte("+OK\r\n"))
			}
		}
	}()
	return ln.Addr().String()
}

// TestSnapshotReplies: every form of reply to SYNC, well formed or not,
// gives the copy or an error that says what was wrong; none hangs.
func TestSnapshotReplies(t *testing.T) {
	mark := strings.Repeat("m", 40)
	for _, tc := range []struct {
		name, reply string
		want        string // the copy; "" with an error
		err         string
		refused     bool
	}{
		{name: "length", reply: "\n\n$5\r\nhello", want: "hello"},
		{name: "length, more after", reply: "$5\r\nhello*1\r\n$4\r\nPING\r\n", want: "hello"},
		{name: "eof mark", reply: "$EOF:" + mark + "\r\npay" + mark[:10] + "load" + mark, want: "pay" + mark[:10] + "load"},
		{name: "refused", reply: "-NOPERM this user has no permissions to run the 'sync' command\r\n", err: "refused the replication handshake: NOPERM", refused: true},
		{name: "not a copy", reply: "+OK\r\n", err: "unexpected reply to SYNC"},
		{name: "cut short", reply: "$10\r\nabc", err: "cut short after 3 of 10 bytes"},
		{name: "negative length", reply: "$-5\r\n", err: "bad length"},
		{name: "bad mark", reply: "$EOF:short\r\nabc", err: "bad end mark"},
		{name: "eof cut short", reply: "$EOF:" + mark + "\r\nabc", err: "cut short after"},
		{name: "nothing", reply: "", err: "EOF"},
		{name: "endless line", reply: strings.Repeat("x", 10000), err: "a line of more than 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := syncServer(t, tc.reply)
			var got bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			n, err := Snapshot(ctx, addr, &got)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				if errors.Is(err, kavach.ErrRefused) != tc.refused {
					t.Fatalf("errors.Is(%v, ErrRefused) = %v, want %v", err, !tc.refused, tc.refused)
				}
				return
			}
			if err != nil || got.String() != tc.want || n != int64(len(tc.want)) {
				t.Fatalf("copy %q (%d bytes), %v; want %q", got.String(), n, err, tc.want)
			}
		})
	}
}

// FuzzReadSync: any bytes in reply to SYNC give a copy or an error, never
// a panic, and never more bytes than came.
func FuzzReadSync(f *testing.F) {
	f.Add([]byte("\n$5\r\nhello"))
	f.Add([]byte("$EOF:" + strings.Repeat("a", 40) + "\r\nxy" + strings.Repeat("a", 40)))
	f.Add([]byte("-ERR no\r\n"))
	f.Add([]byte("$99999999999999999999\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &client{r: bufio.NewReader(bytes.NewReader(data))}
		var out bytes.Buffer
		n, _ := c.readSync(&out)
		if n != int64(out.Len()) || out.Len() > len(data) {
			t.Fatalf("reported %d bytes, wrote %d, of %d read", n, out.Len(), len(data))
		}
	})
}

// startDebian starts Debian's packaged server through the launcher, as a
// running service for these tests.
func startDebian(t *testing.T, l kavach.Launch) kavach.Process {
	t.Helper()
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		t.Fatalf("Debian's redis-server is not installed (scripts/deps.sh installs it): %v", err)
	}
	l.Path = "/usr/bin/redis-server"
	p, err := Integration{}.Start(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

func do(t *testing.T, addr string, args ...string) Value {
	t.Helper()
	c, err := dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestStateRoundTrip on Debian's packaged server: a snapshot taken
// through the handshake loads into a fresh build as its data file (every
// database, every key), a cut of it holds the keys named in each
// database with their expiry, and restoring the cut gives the same
// values; a toucher follows SELECT, captures a key once per database, and
// says when a request reads the whole keyspace.
func TestStateRoundTrip(t *testing.T) {
	src := startDebian(t, kavach.Launch{})
	ctx := context.Background()
	for _, cmd := range [][]string{
		{"SET", "a", "1"}, {"RPUSH", "l", "x", "y"}, {"SET", "t", "v", "EX", "3600"},
		{"SELECT", "3"},
	} {
		do(t, src.Addr(), cmd...)
	}
	c, err := dial(ctx, src.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.do("SELECT", "3")
	c.do("HSET", "a", "f", "g")
	c.do("SET", "only3", "z")
	c.Close()

	snap := filepath.Join(t.TempDir(), "snap.rdb")
	f, err := os.Create(snap)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Snapshot(ctx, src.Addr(), f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	loaded := startDebian(t, kavach.Launch{Data: snap})
	held, err := Integration{}.Held(ctx, loaded.Addr())
	if err != nil || held[0] != 3 || held[3] != 2 || len(held) != 2 {
		t.Fatalf("a build started from the snapshot holds %v (%v), want db0: 3, db3: 2", held, err)
	}
	now := time.Now()
	keys, err := CutSnapshot(ctx, loaded.Addr(), [][]byte{[]byte("a"), []byte("t"), []byte("missing")}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || keys[0].DB != 0 || string(keys[0].Key) != "a" || keys[1].DB != 0 || string(keys[1].Key) != "t" || keys[2].DB != 3 || string(keys[2].Key) != "a" {
		t.Fatalf("cut: %+v, want a and t in db 0, a in db 3", keys)
	}
	if exp := keys[1].ExpireAt - now.UnixMilli(); exp < 3590_000 || exp > 3600_000 || keys[0].ExpireAt != 0 {
		t.Fatalf("expiry of t %d ms from now, of a %d: want about an hour, and none", exp, keys[0].ExpireAt)
	}

	fresh := startDebian(t, kavach.Launch{})
	if err := (Integration{}).Restore(ctx, fresh.Addr(), keys); err != nil {
		t.Fatal(err)
	}
	if held, _ := (Integration{}).Held(ctx, fresh.Addr()); held[0] != 2 || held[3] != 1 {
		t.Fatalf("restored: %v, want db0: 2, db3: 1", held)
	}
	if v := do(t, fresh.Addr(), "GET", "a"); string(v.Str) != "1" {
		t.Fatalf("GET a after restore: %s", v.String())
	}
	if v := do(t, fresh.Addr(), "TTL", "t"); v.Int < 3590 || v.Int > 3600 {
		t.Fatalf("TTL t after restore: %s", v.String())
	}

	tc, err := NewToucher(ctx, src.Addr(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	touch := func(conn uint64, n int, args ...string) []kavach.KeyState {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		ks, err := tc.Touch(conn, n, AppendCommand(nil, b...))
		if err != nil {
			t.Fatal(err)
		}
		return ks
	}
	if ks := touch(1, 1, "GET", "a"); len(ks) != 1 || ks[0].DB != 0 {
		t.Fatalf("first touch of a in db 0: %+v", ks)
	}
	touch(2, 2, "SELECT", "3")
	if ks := touch(2, 3, "HGET", "a", "f"); len(ks) != 1 || ks[0].DB != 3 {
		t.Fatalf("first touch of a in db 3: %+v", ks)
	}
	if ks := touch(1, 4, "APPEND", "a", "x"); len(ks) != 0 {
		t.Fatalf("second touch of a in db 0 captured again: %+v", ks)
	}
	if ks := touch(1, 5, "GET", "nothere"); len(ks) != 0 {
		t.Fatalf("a key that does not exist was captured: %+v", ks)
	}
	if tc.Whole() != "" {
		t.Fatalf("whole %q before any aggregate read", tc.Whole())
	}
	touch(1, 6, "DBSIZE")
	if w := tc.Whole(); !strings.Contains(w, "step 6 reads the whole keyspace (DBSIZE)") {
		t.Fatalf("whole %q, want step 6's DBSIZE", w)
	}
	if names := tc.Names(); len(names) != 2 || string(names[0]) != "a" || string(names[1]) != "nothere" {
		t.Fatalf("names %q", names)
	}
}
