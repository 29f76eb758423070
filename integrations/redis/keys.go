package redis

import (
	"bufio"
	"context"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
)

var _ kavach.KeyFinder = Launcher{}

// Keys asks the running build which keys each request touches, from the
// server's own key specs: COMMAND GETKEYS. A command the server says has
// no key arguments touches no key, unless COMMAND INFO puts it in the
// @keyspace, @write or @scripting categories (DBSIZE, FLUSHALL, KEYS,
// SCAN, EVAL's undeclared keys): those may touch any key (nil). A request
// the server cannot place (an unknown command, a wrong arity, no answer)
// is unknown (nil) too. One connection asks everything, one request at a
// time; distinct requests are asked once.
func (Launcher) Keys(ctx context.Context, addr string, requests [][]byte) [][]string {
	out := make([][]string, len(requests))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return out
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	r := bufio.NewReader(conn)
	ask := func(args ...[]byte) (Value, error) {
		if _, err := conn.Write(AppendCommand(nil, args...)); err != nil {
			return Value{}, err
		}
		return readReply(r)
	}
	seen := map[string][]string{}
	global := map[string]bool{} // command name -> may touch any key
	for i, req := range requests {
		if keys, ok := seen[string(req)]; ok {
			out[i] = keys
			continue
		}
		out[i] = keysOf(req, ask, global)
		seen[string(req)] = out[i]
	}
	return out
}

func keysOf(req []byte, ask func(args ...[]byte) (Value, error), global map[string]bool) []string {
	c, err := ParseCommand(req)
	if err != nil || c.Name == "" {
		return nil
	}
	// COMMAND GETKEYS wants the command and at least one argument: a
	// command alone (DBSIZE, PING) is placed by its categories only.
	if len(c.Args) > 1 {
		v, err := ask(append([][]byte{[]byte("COMMAND"), []byte("GETKEYS")}, c.Args...)...)
		if err != nil {
			return nil
		}
		if v.Kind != KindError {
			keys := []string{}
			for _, e := range v.Elems {
				keys = append(keys, string(e.Str))
			}
			return keys
		}
		if !strings.Contains(strings.ToLower(string(v.Str)), "no key arguments") {
			return nil
		}
	}
	g, ok := global[c.Name]
	if !ok {
		g = true
		if info, err := ask([]byte("COMMAND"), []byte("INFO"), []byte(c.Name)); err == nil && len(info.Elems) == 1 && len(info.Elems[0].Elems) > 6 {
			g = false
			for _, cat := range info.Elems[0].Elems[6].Elems {
				if slices.Contains([]string{"@keyspace", "@write", "@scripting"}, strings.ToLower(string(cat.Str))) {
					g = true
				}
			}
		}
		global[c.Name] = g
	}
	if g {
		return nil
	}
	return []string{}
}
