package redis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kavach-dev/kavach/launch"
)

// Keys asks the running build which keys each request touches, and which
// of them it writes, from the server's own key specs: COMMAND
// GETKEYSANDFLAGS (a key is written unless its flags say RO; before Redis
// 7, COMMAND GETKEYS and the command's write flag). A script (@scripting:
// EVAL, FCALL) writes every key it names, and one that names none may
// touch any key (nil). A command the server says has no key arguments
// touches no key, unless COMMAND INFO puts it in the @keyspace, @write or
// @scripting categories (DBSIZE, FLUSHALL, KEYS, SCAN): those may touch
// any key (nil), and write any unless the command is readonly. A request
// the server cannot place (an unknown command, a wrong arity, no answer)
// is unknown (nil): it may touch and write anything. One connection asks
// everything, one request at a time; distinct requests are asked once.
func (Integration) Keys(ctx context.Context, addr string, requests [][]byte) (keys, writes, replaces [][]string) {
	keys, writes, replaces = make([][]string, len(requests)), make([][]string, len(requests)), make([][]string, len(requests))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := launch.Dial(ctx, addr)
	if err != nil {
		return keys, writes, replaces
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	r := bufio.NewReaderSize(conn, 256<<10)
	ask := func(args ...[]byte) (Value, error) {
		if _, err := conn.Write(AppendCommand(nil, args...)); err != nil {
			return Value{}, err
		}
		return readReply(r)
	}
	type answer struct{ keys, writes, replaces []string }
	seen := map[string]answer{}
	infos := map[string]commandInfo{}
	// The first question about each distinct request (COMMAND
	// GETKEYSANDFLAGS) is pipelined, a chunk at a time: a long
	// recording's requests are mostly distinct, and one round trip each
	// took minutes for millions.
	pre, ok := prefetchKeys(conn, r, requests)
	if !ok {
		return keys, writes, replaces // the connection's answers are out of step: all unknown
	}
	for i, req := range requests {
		a, ok := seen[string(req)]
		if !ok {
			q := ask
			if v, ok := pre[string(req)]; ok {
				q = func(args ...[]byte) (Value, error) {
					if len(args) > 2 && string(args[0]) == "COMMAND" && string(args[1]) == "GETKEYSANDFLAGS" {
						return v, nil
					}
					return ask(args...)
				}
			}
			a.keys, a.writes, a.replaces = keysOf(req, q, infos)
			seen[string(req)] = a
		}
		keys[i], writes[i], replaces[i] = a.keys, a.writes, a.replaces
	}
	return keys, writes, replaces
}

// prefetchKeys asks COMMAND GETKEYSANDFLAGS of every distinct request
// with arguments, pipelined a chunk at a time, and returns the answers by
// request (a request that is not a command with arguments has none:
// keysOf places it). ok is false when a chunk was not answered whole.
func prefetchKeys(conn io.Writer, r *bufio.Reader, requests [][]byte) (map[string]Value, bool) {
	const chunk = 256
	pre := map[string]Value{}
	var asked []string
	var buf []byte
	flush := func() bool {
		if len(asked) == 0 {
			return true
		}
		if _, err := conn.Write(buf); err != nil {
			return false
		}
		for _, req := range asked {
			v, err := readOneReply(r)
			if err != nil {
				return false
			}
			pre[req] = v
		}
		asked, buf = asked[:0], buf[:0]
		return true
	}
	queued := map[string]bool{}
	for _, req := range requests {
		if queued[string(req)] {
			continue
		}
		queued[string(req)] = true
		c, err := ParseCommand(req)
		if err != nil || len(c.Args) < 2 {
			continue
		}
		buf = AppendCommand(buf, append([][]byte{[]byte("COMMAND"), []byte("GETKEYSANDFLAGS")}, c.Args...)...)
		asked = append(asked, string(req))
		if len(asked) == chunk && !flush() {
			return nil, false
		}
	}
	return pre, flush()
}

// readOneReply reads exactly one reply from r, leaving the ones after it
// (pipelined) buffered. A reply larger than r's buffer is an error.
func readOneReply(r *bufio.Reader) (Value, error) {
	for {
		n := r.Buffered()
		if n > 0 {
			b, _ := r.Peek(n)
			m, err := Split(b)
			if err != nil {
				return Value{}, err
			}
			if m > 0 {
				v, err := Parse(bytes.Clone(b[:m]))
				r.Discard(m)
				return v, err
			}
			if n == r.Size() {
				return Value{}, errors.New("a reply larger than the buffer")
			}
		}
		if _, err := r.Peek(n + 1); err != nil {
			return Value{}, err
		}
	}
}

// commandInfo is what COMMAND INFO tells of a command, for placing its keys.
type commandInfo struct {
	known    bool // the server answered for it
	global   bool // @keyspace, @write or @scripting: may touch any key
	script   bool // @scripting
	write    bool // the write flag
	readonly bool // the readonly flag
}

// infoOf asks COMMAND INFO about a command once.
func infoOf(name string, ask func(args ...[]byte) (Value, error), infos map[string]commandInfo) commandInfo {
	if ci, ok := infos[name]; ok {
		return ci
	}
	var ci commandInfo
	if info, err := ask([]byte("COMMAND"), []byte("INFO"), []byte(name)); err == nil && len(info.Elems) == 1 && len(info.Elems[0].Elems) > 6 {
		ci.known = true
		for _, f := range info.Elems[0].Elems[2].Elems {
			switch strings.ToLower(string(f.Str)) {
			case "write":
				ci.write = true
			case "readonly":
				ci.readonly = true
			}
		}
		for _, cat := range info.Elems[0].Elems[6].Elems {
			c := strings.ToLower(string(cat.Str))
			ci.global = ci.global || slices.Contains([]string{"@keyspace", "@write", "@scripting"}, c)
			ci.script = ci.script || c == "@scripting"
		}
	}
	infos[name] = ci
	return ci
}

// keysOf places one request: the keys it touches, those it writes, and
// those whose content it replaces whole (askKeys).
func keysOf(req []byte, ask func(args ...[]byte) (Value, error), infos map[string]commandInfo) (keys, writes, replaces []string) {
	c, err := ParseCommand(req)
	if err != nil || c.Name == "" {
		return nil, nil, nil
	}
	// COMMAND GETKEYS(ANDFLAGS) wants the command and at least one
	// argument: a command alone (DBSIZE, PING) is placed by its
	// categories only.
	if len(c.Args) > 1 {
		keys, writes, replaces, ok, err := askKeys(c.Name, c.Args, ask, infos)
		if err != nil {
			return nil, nil, nil
		}
		if ok {
			switch ci := infoOf(c.Name, ask, infos); {
			case ci.script && len(keys) == 0:
				return nil, nil, nil // a script's undeclared keys
			case ci.script || !ci.known:
				writes, replaces = keys, nil
			}
			return keys, writes, replaces
		}
	}
	ci := infoOf(c.Name, ask, infos)
	switch {
	case !ci.known || ci.global && (ci.write || ci.script || !ci.readonly):
		return nil, nil, nil
	case ci.global:
		return nil, []string{}, nil
	}
	return []string{}, []string{}, nil
}

// askKeys asks the server for a request's keys and their flags: ok false
// when the server says the command has no key arguments, an error when it
// cannot place the request. replaces are the keys flagged OW (its content
// overwritten, not read) or RM (removed): none before Redis 7.
func askKeys(name string, args [][]byte, ask func(args ...[]byte) (Value, error), infos map[string]commandInfo) (keys, writes, replaces []string, ok bool, err error) {
	noKeys := func(v Value) bool { return strings.Contains(strings.ToLower(string(v.Str)), "no key arguments") }
	v, err := ask(append([][]byte{[]byte("COMMAND"), []byte("GETKEYSANDFLAGS")}, args...)...)
	if err != nil {
		return nil, nil, nil, false, err
	}
	if v.Kind != KindError {
		keys, writes = []string{}, []string{}
		for _, e := range v.Elems {
			if len(e.Elems) == 0 {
				continue
			}
			k := string(e.Elems[0].Str)
			keys = append(keys, k)
			flag := func(name string) bool {
				return len(e.Elems) > 1 && slices.ContainsFunc(e.Elems[1].Elems, func(f Value) bool { return strings.EqualFold(string(f.Str), name) })
			}
			if !flag("RO") {
				writes = append(writes, k)
			}
			if flag("OW") || flag("RM") {
				replaces = append(replaces, k)
			}
		}
		return keys, writes, replaces, true, nil
	}
	if noKeys(v) {
		return nil, nil, nil, false, nil
	}
	if !strings.Contains(strings.ToLower(string(v.Str)), "unknown subcommand") {
		return nil, nil, nil, false, errNotPlaced
	}
	// Before Redis 7: the keys alone; the command's flags tell the writes.
	v, err = ask(append([][]byte{[]byte("COMMAND"), []byte("GETKEYS")}, args...)...)
	if err != nil {
		return nil, nil, nil, false, err
	}
	if v.Kind == KindError {
		if noKeys(v) {
			return nil, nil, nil, false, nil
		}
		return nil, nil, nil, false, errNotPlaced
	}
	keys = []string{}
	for _, e := range v.Elems {
		keys = append(keys, string(e.Str))
	}
	writes = []string{}
	if ci := infoOf(name, ask, infos); !ci.readonly || ci.write {
		writes = keys
	}
	return keys, writes, nil, true, nil
}

// errNotPlaced is the server refusing to name a request's keys.
var errNotPlaced = errors.New("the server cannot place the request")
