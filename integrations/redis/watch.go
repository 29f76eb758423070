package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kavach-dev/kavach"
)

// SnapshotMark is the ECHO that Snapshot sends in the same write as its
// SYNC: a watch of the service (MONITOR) shows it where the service ran
// it, and the service runs no other client's command between the two, so
// the writes the watch shows after it are the ones the snapshot does not
// hold.
const SnapshotMark = "kavach: snapshot"

// Watcher follows every command a running service runs, whatever client
// sent it, through MONITOR (kavach.StateTaking.Watch): a recording keeps
// the writes that did not come through its proxy. Which commands write,
// block or run scripts, and where their keys are, it asks the service
// (COMMAND INFO, once per command) on a second connection, since a
// connection in MONITOR mode takes no more commands. Next is called from
// one goroutine, Keys from another: the questions are under a lock.
type Watcher struct {
	mon *client

	mu     sync.Mutex
	book   *commandBook // on its own connection
	caller string       // origin of the latest script caller, for the commands it runs
}

// NewWatcher starts watching the service at addr with the environment's
// credentials. A service that refuses MONITOR gives a *RefusedError.
func NewWatcher(ctx context.Context, addr string) (*Watcher, error) {
	mon, err := dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("watch of %s: %w", addr, err)
	}
	v, err := mon.do("MONITOR")
	if err == nil && v.Kind == KindError {
		err = &RefusedError{Reply: firstLine(v.Str)}
	}
	if err != nil {
		mon.Close()
		return nil, fmt.Errorf("watch of %s: %w", addr, err)
	}
	mon.conn.SetDeadline(time.Time{})
	q, err := dial(ctx, addr)
	if err != nil {
		mon.Close()
		return nil, fmt.Errorf("watch of %s: %w", addr, err)
	}
	q.conn.SetDeadline(time.Time{})
	return &Watcher{mon: mon, book: newCommandBook(q)}, nil
}

// Close ends the watch.
func (w *Watcher) Close() error {
	err := w.mon.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(err, w.book.c.Close())
}

// Next reads the next command the service ran.
func (w *Watcher) Next() (kavach.Ran, error) {
	for {
		v, err := w.mon.read()
		if err != nil {
			return kavach.Ran{}, err
		}
		if v.Kind != KindSimple {
			continue // not a command line (a reply MONITOR never sends)
		}
		ml, err := ParseMonitorLine(v.Str)
		if err != nil {
			return kavach.Ran{}, fmt.Errorf("watch: %w", err)
		}
		return w.ran(ml), nil
	}
}

// ran says what the command of one MONITOR line is.
func (w *Watcher) ran(ml MonitorLine) kavach.Ran {
	argv := argStrings(ml.Args)
	name := strings.ToUpper(argv[0])
	r := kavach.Ran{Time: ml.Time, DB: ml.DB, Origin: ml.Origin, Request: AppendCommand(nil, ml.Args...)}
	r.Same = func(request []byte) bool {
		if bytes.Equal(request, r.Request) {
			return true // sent as the feed's arguments encode: most clients
		}
		c, err := ParseCommand(request)
		return err == nil && sameArgs(c.Args, ml.Args)
	}
	switch {
	case ml.Origin == "lua":
		r.Origin, r.Script = w.caller, true
	case scriptCaller(name):
		r.Caller, w.caller = true, ml.Origin
	case name == "ECHO" && len(argv) == 2 && argv[1] == SnapshotMark:
		r.Mark = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.book.learn(argv) // a question that fails leaves the command unknown: no flags, keys not known
	f := w.book.flagsOf(argv)
	r.Write = f["write"] || name == "SCRIPT" || name == "FUNCTION"
	r.Blocking = f["blocking"]
	if r.Write || name == "DUMP" {
		// Where the keys are matters for writes (and for the captures'
		// DUMPs) only; a read's are left unknown.
		r.Keys, r.KeysKnown = w.keysOf(argv, ml.Args)
	}
	return r
}

func scriptCaller(name string) bool {
	switch name {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
		return true
	}
	return false
}

func sameArgs(a, b [][]byte) bool {
	if len(a) != len(b) || len(a) == 0 || !bytes.EqualFold(a[0], b[0]) {
		return false
	}
	for i := 1; i < len(a); i++ {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// Keys are the keys request names, and whether the service said where
// its keys are.
func (w *Watcher) Keys(request []byte) ([][]byte, bool) {
	c, err := ParseCommand(request)
	if err != nil || c.Name == "" {
		return nil, false
	}
	argv := argStrings(c.Args)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.book.learn(argv)
	return w.keysOf(argv, c.Args)
}

// keysOf places the keys of argv; w.mu is held.
func (w *Watcher) keysOf(argv []string, args [][]byte) ([][]byte, bool) {
	name := strings.ToUpper(argv[0])
	if w.book.flags[name] == nil {
		return nil, false // the service did not say
	}
	if aggregateRead(argv) || name == "FLUSHALL" || name == "FLUSHDB" || name == "SWAPDB" {
		return nil, false
	}
	keys := w.book.keyArgs(argv, args)
	if len(keys) == 0 && scriptCaller(name) {
		return nil, false
	}
	return keys, true
}

// commandFlags reads the flags of COMMAND INFO's reply, subcommands as
// "CMD|SUB".
func commandFlags(v Value) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	var read func(info Value)
	read = func(info Value) {
		if len(info.Elems) < 3 {
			return
		}
		f := map[string]bool{}
		for _, e := range info.Elems[2].Elems {
			f[strings.ToLower(string(e.Str))] = true
		}
		out[strings.ToUpper(string(info.Elems[0].Str))] = f
		if len(info.Elems) > 9 {
			for _, sub := range info.Elems[9].Elems {
				read(sub)
			}
		}
	}
	for _, info := range v.Elems {
		read(info)
	}
	return out
}

// MonitorLine is one line of MONITOR's feed:
//
//	1796461511.979482 [0 127.0.0.1:55514] "set" "a" "1"
type MonitorLine struct {
	Time   time.Time
	DB     int
	Origin string // "127.0.0.1:55514", "[::1]:6379", "unix:/path", "lua"
	Args   [][]byte
}

// ParseMonitorLine parses one line of MONITOR's feed (without its "+"):
// the service's time, the database and client, then each argument
// quoted as the service quotes it (\\, \", \n, \r, \t, \a, \b, \xHH).
func ParseMonitorLine(line []byte) (MonitorLine, error) {
	var ml MonitorLine
	ts, rest, ok := bytes.Cut(line, []byte(" ["))
	if !ok {
		return ml, fmt.Errorf("monitor line without a client: %q", head64(line))
	}
	sec, usec, _ := bytes.Cut(ts, []byte("."))
	s, err1 := strconv.ParseInt(string(sec), 10, 64)
	us, err2 := strconv.ParseInt(string(usec), 10, 64)
	if err1 != nil || err2 != nil || us < 0 || us >= 1e6 || s < 0 {
		return ml, fmt.Errorf("monitor line with a bad time: %q", head64(line))
	}
	ml.Time = time.Unix(s, us*1000)
	head, args, ok := bytes.Cut(rest, []byte(`] "`))
	if !ok {
		return ml, fmt.Errorf("monitor line without a command: %q", head64(line))
	}
	db, origin, ok := bytes.Cut(head, []byte(" "))
	n, err := strconv.Atoi(string(db))
	if !ok || err != nil || n < 0 || len(origin) == 0 {
		return ml, fmt.Errorf("monitor line with a bad client: %q", head64(line))
	}
	ml.DB, ml.Origin = n, string(origin)
	ml.Args, err = unquoteArgs(append([]byte{'"'}, args...))
	if err != nil {
		return ml, fmt.Errorf("monitor line %q: %w", head64(line), err)
	}
	return ml, nil
}

// unquoteArgs splits `"a" "b\n"` into its arguments.
func unquoteArgs(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		if b[0] != '"' {
			return nil, fmt.Errorf("argument %d is not quoted", len(out)+1)
		}
		var arg []byte
		i := 1
		for ; i < len(b) && b[i] != '"'; i++ {
			if b[i] != '\\' {
				arg = append(arg, b[i])
				continue
			}
			if i+1 >= len(b) {
				return nil, errors.New("an escape at the end")
			}
			i++
			switch b[i] {
			case 'n':
				arg = append(arg, '\n')
			case 'r':
				arg = append(arg, '\r')
			case 't':
				arg = append(arg, '\t')
			case 'a':
				arg = append(arg, '\a')
			case 'b':
				arg = append(arg, '\b')
			case 'x':
				if i+2 >= len(b) {
					return nil, errors.New("a short \\x escape")
				}
				v, err := strconv.ParseUint(string(b[i+1:i+3]), 16, 8)
				if err != nil {
					return nil, fmt.Errorf("a bad \\x escape: %q", b[i-1:i+3])
				}
				arg = append(arg, byte(v))
				i += 2
			default:
				arg = append(arg, b[i])
			}
		}
		if i >= len(b) {
			return nil, fmt.Errorf("argument %d is not closed", len(out)+1)
		}
		out = append(out, arg)
		b = b[i+1:]
		if len(b) > 0 {
			if b[0] != ' ' {
				return nil, fmt.Errorf("no space after argument %d", len(out))
			}
			b = b[1:]
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no command")
	}
	return out, nil
}
