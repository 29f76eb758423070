package redis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

// The environment variables the recorder takes a running service's
// credentials from, for the replication handshake and DUMP (never a flag:
// ps shows those).
const (
	EnvUser     = "KAVACH_UPSTREAM_USER"
	EnvPassword = "KAVACH_UPSTREAM_PASSWORD"
)

// DataFile is the data file a Redis build loads at start-up from its
// directory (Launch.Data is copied there).
const DataFile = "dump.rdb"

// RefusedError is a service refusing the replication handshake (an ACL
// without SYNC, a managed service): the recorder captures keys at first
// touch instead.
type RefusedError struct{ Reply string }

func (e *RefusedError) Error() string {
	return "the service refused the replication handshake: " + e.Reply
}

// Is makes a RefusedError a kavach.ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == kavach.ErrRefused }

// client is one connection to a running service for the state's own
// questions, replies read one at a time with what follows kept.
type client struct {
	conn  net.Conn
	r     *bufio.Reader
	buf   []byte
	chunk []byte // read's buffer, kept: a watch reads a reply per command the service runs
}

// connect connects to addr, the connection bounded by ctx's deadline:
// a build Kavach started (no credentials), or the start of dial.
func connect(ctx context.Context, addr string) (*client, error) {
	conn, err := launch.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	return &client{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}, nil
}

// dial connects to addr and authenticates with the environment's
// credentials, if any.
func dial(ctx context.Context, addr string) (*client, error) {
	c, err := connect(ctx, addr)
	if err != nil {
		return nil, err
	}
	conn := c.conn
	if pass := os.Getenv(EnvPassword); pass != "" {
		args := []string{"AUTH", pass}
		if user := os.Getenv(EnvUser); user != "" {
			args = []string{"AUTH", user, pass}
		}
		v, err := c.do(args...)
		if err != nil {
			conn.Close()
			return nil, err
		}
		if v.Kind == KindError {
			conn.Close()
			return nil, fmt.Errorf("AUTH with %s: %s", EnvPassword, firstLine(v.Str))
		}
	}
	return c, nil
}

func (c *client) Close() error { return c.conn.Close() }

// do sends one command and reads its reply.
func (c *client) do(args ...string) (Value, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return c.doBytes(b...)
}

func (c *client) doBytes(args ...[]byte) (Value, error) {
	if _, err := c.conn.Write(AppendCommand(nil, args...)); err != nil {
		return Value{}, err
	}
	return c.read()
}

// read reads one reply, keeping the bytes that follow it.
func (c *client) read() (Value, error) {
	if c.chunk == nil {
		c.chunk = make([]byte, 64<<10)
	}
	chunk := c.chunk
	for {
		if len(c.buf) > 0 {
			m, err := Split(c.buf)
			if err != nil {
				return Value{}, err
			}
			if m > 0 {
				v, err := Parse(c.buf[:m])
				c.buf = c.buf[m:]
				return v, err
			}
		}
		n, err := c.r.Read(chunk)
		c.buf = append(c.buf, chunk[:n]...)
		if err != nil && n == 0 {
			return Value{}, err
		}
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(s)
}

// Snapshot takes a point-in-time copy of the running service at addr in
// its own data-file format, through the replication handshake (what
// redis-cli --rdb does): SYNC, without announcing the EOF capability, so
// that the service writes its data file now rather than waiting to
// stream it to more replicas. The copy is streamed to dst, never held
// whole. A service that refuses the handshake gives a *RefusedError.
func Snapshot(ctx context.Context, addr string, dst io.Writer) (int64, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return 0, fmt.Errorf("snapshot of %s: %w", addr, err)
	}
	defer c.Close()
	// Keep the link to the copy alone where the build knows how
	// (REPLCONF rdb-only, Redis 7.0): no replication stream follows it.
	c.do("REPLCONF", "rdb-only", "1")
	// The mark and SYNC in one write: the service runs no other client's
	// command between them, so a watch of the service sees where the
	// snapshot was taken (SnapshotMark). The mark's reply is skipped: the
	// service refuses SYNC on a connection with a reply pending.
	cmds := AppendCommand(nil, []byte("CLIENT"), []byte("REPLY"), []byte("SKIP"))
	cmds = AppendCommand(cmds, []byte("ECHO"), []byte(SnapshotMark))
	if _, err := c.conn.Write(AppendCommand(cmds, []byte("SYNC"))); err != nil {
		return 0, fmt.Errorf("snapshot of %s: %w", addr, err)
	}
	n, err := c.readSync(dst)
	var refused *RefusedError
	if err != nil && !errors.As(err, &refused) {
		err = fmt.Errorf("snapshot of %s: %w", addr, err)
	}
	return n, err
}

// readSync reads the reply to SYNC, the copy streamed to dst.
func (c *client) readSync(dst io.Writer) (int64, error) {
	// While it writes the copy the service sends newlines to keep the
	// link alive; then "$LEN\r\n" or "$EOF:MARK\r\n" and the bytes.
	var line []byte
	for {
		var err error
		if line, err = c.line(); err != nil {
			return 0, err
		}
		if len(line) > 0 {
			break
		}
	}
	switch {
	case line[0] == '-':
		return 0, &RefusedError{Reply: string(line[1:])}
	case line[0] != '$':
		return 0, fmt.Errorf("unexpected reply to SYNC: %q", head64(line))
	}
	if mark, ok := bytes.CutPrefix(line[1:], []byte("EOF:")); ok {
		if len(mark) != 40 {
			return 0, fmt.Errorf("bad end mark in %q", head64(line))
		}
		return c.copyUntil(dst, mark)
	}
	n, err := strconv.ParseInt(string(line[1:]), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad length in %q", head64(line))
	}
	pre := min(int64(len(c.buf)), n)
	if _, err := dst.Write(c.buf[:pre]); err != nil {
		return 0, err
	}
	c.buf = c.buf[pre:]
	m, err := io.CopyN(dst, c.r, n-pre)
	if err != nil {
		return pre + m, fmt.Errorf("cut short after %d of %d bytes: %w", pre+m, n, err)
	}
	return n, nil
}

func head64(b []byte) []byte { return b[:min(len(b), 64)] }

// line reads one line, its "\r\n" or "\n" cut.
func (c *client) line() ([]byte, error) {
	for {
		if i := bytes.IndexByte(c.buf, '\n'); i >= 0 {
			l := bytes.TrimSuffix(c.buf[:i], []byte("\r"))
			c.buf = c.buf[i+1:]
			return l, nil
		}
		if len(c.buf) > 4096 {
			return nil, fmt.Errorf("a line of more than 4096 bytes: %q…", head64(c.buf))
		}
		chunk := make([]byte, 4096)
		n, err := c.r.Read(chunk)
		c.buf = append(c.buf, chunk[:n]...)
		if err != nil && n == 0 {
			return nil, err
		}
	}
}

// copyUntil copies what comes up to mark (the EOF form of a diskless
// copy) to dst.
func (c *client) copyUntil(dst io.Writer, mark []byte) (int64, error) {
	var n int64
	chunk := make([]byte, 64<<10)
	for {
		if i := bytes.Index(c.buf, mark); i >= 0 {
			w, err := dst.Write(c.buf[:i])
			return n + int64(w), err
		}
		if keep := len(c.buf) - len(mark); keep > 0 {
			w, err := dst.Write(c.buf[:keep])
			n += int64(w)
			if err != nil {
				return n, err
			}
			c.buf = c.buf[keep:]
		}
		m, err := c.r.Read(chunk)
		c.buf = append(c.buf, chunk[:m]...)
		if err != nil && m == 0 {
			return n, fmt.Errorf("cut short after %d bytes: %w", n, err)
		}
	}
}

// Capturer captures keys of a running service just before the first
// request that names them is forwarded (first-touch state), on a
// connection of its own.
type Capturer struct {
	c *client
}

// NewCapturer connects to the service at addr with the environment's
// credentials.
func NewCapturer(ctx context.Context, addr string) (*Capturer, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("first-touch capture on %s: %w", addr, err)
	}
	c.conn.SetDeadline(time.Time{})
	return &Capturer{c: c}, nil
}

// Close closes the capture connection.
func (p *Capturer) Close() error { return p.c.Close() }

// Capture reads key in database db as it is now: its DUMP payload and
// its expiry as an absolute time. ok false: the key does not exist.
func (p *Capturer) Capture(db int, key []byte) (ks kavach.KeyState, ok bool, err error) {
	p.c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	defer p.c.conn.SetDeadline(time.Time{})
	return captureKey(p.c, db, key, time.Now())
}

// captureKey asks c for key in database db. Its expiry is asked as a
// time to live (PTTL, every version) and made absolute with now, the
// service's time when it answered.
func captureKey(c *client, db int, key []byte, now time.Time) (ks kavach.KeyState, ok bool, err error) {
	// One round trip: SELECT, DUMP and PTTL pipelined.
	req := AppendCommand(nil, []byte("SELECT"), []byte(strconv.Itoa(db)))
	req = AppendCommand(req, []byte("DUMP"), key)
	req = AppendCommand(req, []byte("PTTL"), key)
	if _, err := c.conn.Write(req); err != nil {
		return ks, false, err
	}
	var vs [3]Value
	for i := range vs {
		if vs[i], err = c.read(); err != nil {
			return ks, false, err
		}
	}
	for i, what := range []string{"SELECT", "DUMP", "PTTL"} {
		if vs[i].Kind == KindError {
			return ks, false, fmt.Errorf("%s %q: %s", what, key, firstLine(vs[i].Str))
		}
	}
	if vs[1].Null || vs[1].Str == nil {
		return ks, false, nil
	}
	ks = kavach.KeyState{DB: db, Key: append([]byte(nil), key...), Dump: append([]byte(nil), vs[1].Str...)}
	if ttl := vs[2].Int; ttl >= 0 {
		ks.ExpireAt = now.UnixMilli() + ttl
	}
	return ks, true, nil
}

// Restore writes keys into the build at addr: RESTORE with the absolute
// expiry (ABSTTL) in each key's database, pipelined. A key whose expiry
// has passed on the build's clock is not written, as a service loading
// its data file drops it.
func (Integration) Restore(ctx context.Context, addr string, keys []kavach.KeyState) error {
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	c, err := connect(ctx, addr)
	if err != nil {
		return fmt.Errorf("restore state: %w", err)
	}
	defer c.Close()
	const chunk = 256
	db := 0
	for start := 0; start < len(keys); start += chunk {
		var req []byte
		sent := 0
		for _, k := range keys[start:min(start+chunk, len(keys))] {
			if k.DB != db {
				req = AppendCommand(req, []byte("SELECT"), []byte(strconv.Itoa(k.DB)))
				db = k.DB
				sent++
			}
			req = AppendCommand(req, []byte("RESTORE"), k.Key, []byte(strconv.FormatInt(k.ExpireAt, 10)), k.Dump, []byte("REPLACE"), []byte("ABSTTL"))
			sent++
		}
		if _, err := c.conn.Write(req); err != nil {
			return fmt.Errorf("restore state: %w", err)
		}
		for range sent {
			v, err := c.read()
			if err != nil {
				return fmt.Errorf("restore state: %w", err)
			}
			if v.Kind == KindError {
				return fmt.Errorf("restore state: %s", firstLine(v.Str))
			}
		}
	}
	return nil
}

// keyspace is how many keys each database of the build holds (INFO
// keyspace: "db0:keys=3,expires=1,avg_ttl=0"); a database with none is
// not listed.
func keyspace(c *client) (map[int]int, error) {
	v, err := c.do("INFO", "keyspace")
	if err != nil {
		return nil, err
	}
	if v.Kind == KindError {
		return nil, errors.New("INFO keyspace: " + firstLine(v.Str))
	}
	held := map[int]int{}
	for _, line := range strings.Split(string(v.Str), "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		db, err := strconv.Atoi(strings.TrimPrefix(name, "db"))
		if !ok || !strings.HasPrefix(name, "db") || err != nil {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			if n, ok := strings.CutPrefix(f, "keys="); ok {
				if k, err := strconv.Atoi(n); err == nil && k > 0 {
					held[db] = k
				}
			}
		}
	}
	return held, nil
}

// Held is how many keys each database of the build at addr holds.
func (Integration) Held(ctx context.Context, addr string) (map[int]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := connect(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return keyspace(c)
}

// CutSnapshot asks the build at addr, started from a snapshot (a scratch
// instance whose clock stands at the snapshot's time, now), for the keys
// named, in every database that holds keys: the snapshot cut to what a
// recording names. Keys it does not hold are left out.
func CutSnapshot(ctx context.Context, addr string, names [][]byte, now time.Time) ([]kavach.KeyState, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	c, err := connect(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("cut snapshot: %w", err)
	}
	defer c.Close()
	held, err := keyspace(c)
	if err != nil {
		return nil, fmt.Errorf("cut snapshot: %w", err)
	}
	dbs := slices.Sorted(maps.Keys(held))
	var out []kavach.KeyState
	for _, db := range dbs {
		for _, name := range names {
			ks, ok, err := captureKey(c, db, name, now)
			if err != nil {
				return nil, fmt.Errorf("cut snapshot: %w", err)
			}
			if ok {
				out = append(out, ks)
			}
		}
	}
	return out, nil
}

// Executable is the path of the running service's executable, as it
// says itself (INFO server), for a scratch instance of the same build;
// "" when it does not say.
func Executable(ctx context.Context, addr string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := dial(ctx, addr)
	if err != nil {
		return ""
	}
	defer c.Close()
	v, err := c.do("INFO", "server")
	if err != nil || v.Kind == KindError {
		return ""
	}
	for _, line := range strings.Split(string(v.Str), "\n") {
		if val, ok := strings.CutPrefix(strings.TrimSpace(line), "executable:"); ok {
			return val
		}
	}
	return ""
}

// Toucher follows the requests a recording forwards to a running service:
// which keys they name (by the service's own key specs, COMMAND INFO,
// asked once per command on a connection of its own), in which database
// (each connection's SELECT), and whether one reads what no list of keys
// can hold (an aggregate of the keyspace, a script naming no key). With
// capture, it captures each key just before the first request naming it
// is forwarded (first-touch state). Not safe for concurrent use: the
// recorder calls it under its own lock, which is what makes a capture
// come before every request naming the key, on any connection.
type Toucher struct {
	c       *client
	capture bool
	book    *commandBook
	db      map[uint64]int
	seen    map[string]bool // "DB:KEY" touched
	named   map[string]bool // key names touched
	names   [][]byte        // in order of first touch
	whole   string          // why the keys named cannot hold what was read; "" when they can
	step    int
}

// NewToucher connects to the service at addr with the environment's
// credentials.
func NewToucher(ctx context.Context, addr string, capture bool) (*Toucher, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("state of %s: %w", addr, err)
	}
	c.conn.SetDeadline(time.Time{})
	return &Toucher{c: c, capture: capture, book: newCommandBook(c),
		db: map[uint64]int{}, seen: map[string]bool{}, named: map[string]bool{}}, nil
}

// Close closes the toucher's connection.
func (t *Toucher) Close() error { return t.c.Close() }

// Origin is the address the service sees the captures come from; "" when
// the toucher captures nothing.
func (t *Toucher) Origin() string {
	if !t.capture {
		return ""
	}
	return t.c.conn.LocalAddr().String()
}

// Names are the key names the requests named, in order of first touch.
func (t *Toucher) Names() [][]byte { return t.names }

// Whole says why the recording read more than the keys it names (the
// first request that did), or "" when it did not.
func (t *Toucher) Whole() string { return t.whole }

// aggregateRead reports whether a command reads what every key feeds.
func aggregateRead(argv []string) bool {
	switch strings.ToUpper(argv[0]) {
	case "DBSIZE", "KEYS", "SCAN", "RANDOMKEY":
		return true
	case "MEMORY":
		return len(argv) > 1 && strings.EqualFold(argv[1], "STATS")
	case "INFO":
		if len(argv) == 1 {
			return true
		}
		for _, s := range argv[1:] {
			switch strings.ToLower(s) {
			case "keyspace", "all", "everything", "default", "memory", "stats":
				return true
			}
		}
	}
	return false
}

// Forget forgets which keys were touched, so that each is captured
// again at its next touch: an always-on recording (record.Keep) calls it
// at each segment's start, so that a segment holds the keys it needs.
// The names touched are kept.
func (t *Toucher) Forget() { clear(t.seen) }

// Touch takes the next request forwarded on connection conn (the
// recording's step n) and returns the keys it captured for it: none
// unless capturing, and none for a key touched before.
func (t *Toucher) Touch(conn uint64, step int, request []byte) ([]kavach.KeyState, error) {
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return nil, nil
	}
	argv := argStrings(c.Args)
	name := c.Name
	if name == "SELECT" && len(argv) == 2 {
		if n, err := strconv.Atoi(argv[1]); err == nil {
			t.db[conn] = n
		}
		return nil, nil
	}
	if t.whole == "" && aggregateRead(argv) {
		t.whole = fmt.Sprintf("step %d reads the whole keyspace (%s)", step, name)
	}
	refused, err := t.book.learn(argv)
	if err != nil {
		return nil, err
	}
	if refused != "" && t.whole == "" {
		// Where the keys are is unknown: the keys named cannot be said
		// to hold what the recording read.
		t.whole = fmt.Sprintf("the service did not say where the keys of %s are (COMMAND INFO: %s)", name, refused)
	}
	keys := t.book.keyArgs(argv, c.Args)
	if len(keys) == 0 && t.whole == "" && scriptCaller(name) {
		t.whole = fmt.Sprintf("step %d runs a script that names no key (%s): it may read any", step, name)
	}
	var out []kavach.KeyState
	for _, key := range keys {
		// Captured once per database; named once whatever the database
		// (a cut asks every database for each name).
		id := strconv.Itoa(t.db[conn]) + ":" + string(key)
		if t.seen[id] {
			continue
		}
		t.seen[id] = true
		if !t.named[string(key)] {
			t.named[string(key)] = true
			t.names = append(t.names, append([]byte(nil), key...))
		}
		if !t.capture {
			continue
		}
		t.c.conn.SetDeadline(time.Now().Add(10 * time.Second))
		ks, ok, err := captureKey(t.c, t.db[conn], key, time.Now())
		t.c.conn.SetDeadline(time.Time{})
		if err != nil {
			return out, fmt.Errorf("capture at step %d: %w", step, err)
		}
		if ok {
			out = append(out, ks)
		}
	}
	return out, nil
}
