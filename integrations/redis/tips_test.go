package redis

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

// orderProbes are requests whose replies the server orders by a hash
// table, one per command (and subcommand) it tips
// nondeterministic_output_order, on the data orderData writes.
var orderProbes = map[string][]string{
	"command":       {"COMMAND"},
	"command|docs":  {"COMMAND", "DOCS"},
	"command|info":  {"COMMAND", "INFO"},
	"command|list":  {"COMMAND", "LIST"},
	"module|list":   {"MODULE", "LIST"},
	"function|list": {"FUNCTION", "LIST"},
	"keys":          {"KEYS", "*"},
	"hkeys":         {"HKEYS", "h"},
	"hvals":         {"HVALS", "h"},
	"hgetall":       {"HGETALL", "h"},
	"smembers":      {"SMEMBERS", "s1"},
	"sinter":        {"SINTER", "s1", "s2"},
	"sunion":        {"SUNION", "s1", "s2"},
	"sdiff":         {"SDIFF", "s1", "s2"},
}

// orderData fills a server with collections large enough to be hash
// tables, whose order then follows the process's random hash seed.
func orderData(t *testing.T, addr string) {
	t.Helper()
	var cmds [][]string
	// Past every build's listpack limits (512 entries in Redis 7.0, 128
	// in later ones), whatever their configuration defaults.
	for i := range 600 {
		cmds = append(cmds,
			[]string{"SET", fmt.Sprintf("k:%d", i), "v"},
			[]string{"HSET", "h", fmt.Sprintf("f%d", i), fmt.Sprintf("v%d", i)},
			[]string{"SADD", "s1", fmt.Sprintf("m%d", i)},
			[]string{"SADD", "s2", fmt.Sprintf("m%d", i+300)})
	}
	for i := range 4 {
		cmds = append(cmds, []string{"FUNCTION", "LOAD", fmt.Sprintf("#!lua name=lib%d\nredis.register_function('f%d', function() return 1 end)", i, i)})
	}
	for _, c := range cmds {
		if _, err := call(context.Background(), addr, c...); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
	}
}

// rawCall sends one command and returns its reply's bytes.
func rawCall(t *testing.T, addr string, args ...string) []byte {
	t.Helper()
	conn, err := launch.DialTimeout(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if _, err := conn.Write(AppendCommand(nil, b...)); err != nil {
		t.Fatal(err)
	}
	// One request on a fresh connection: everything read is its reply.
	var raw bytes.Buffer
	if _, err := readReply(bufio.NewReader(io.TeeReader(conn, &raw))); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return raw.Bytes()
}

// The commands whose reply order the server itself calls random
// (COMMAND INFO's nondeterministic_output_order tip) are taken from the
// server, not from a list here: each must normalize to the same output in
// two server processes, whose hash seeds differ. A command the server
// tips that this test has no probe for fails the test, so a newer
// server's tipped commands are not silently compared by order.
func TestOrderFreeWhereTheServerSaysSo(t *testing.T) {
	start := func() kavach.Process {
		p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Stop() })
		orderData(t, p.Addr())
		return p
	}
	a, b := start(), start()
	tipped := tippedUnordered(t, a.Addr())
	if len(tipped) == 0 {
		t.Fatal("the server tips no command nondeterministic_output_order")
	}
	differed := 0
	for _, name := range tipped {
		probe, ok := orderProbes[name]
		if !ok {
			t.Errorf("the server tips %s nondeterministic_output_order: add a probe for it and make Normalize order-free there", name)
			continue
		}
		args := make([][]byte, len(probe))
		for i, p := range probe {
			args[i] = []byte(p)
		}
		req := AppendCommand(nil, args...)
		ra, rb := rawCall(t, a.Addr(), probe...), rawCall(t, b.Addr(), probe...)
		if !bytes.Equal(ra, rb) {
			differed++
		}
		na, nb := Integration{}.Normalize(req, ra), Integration{}.Normalize(req, rb)
		if !reflect.DeepEqual(na, nb) {
			t.Errorf("%s: two processes' replies normalize differently", strings.Join(probe, " "))
		}
	}
	// Without replies that really differ in order, the check above shows
	// nothing.
	if differed < len(tipped)/2 {
		t.Errorf("only %d of %d tipped replies differed between the processes: the data are too small to be hash-ordered", differed, len(tipped))
	}
}

// tippedUnordered lists the commands and subcommands (as "name|sub") that
// the server at addr tips nondeterministic_output_order.
func tippedUnordered(t *testing.T, addr string) []string {
	t.Helper()
	v, err := call(context.Background(), addr, "COMMAND")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(c Value)
	walk = func(c Value) {
		if len(c.Elems) < 8 {
			return
		}
		for _, tip := range c.Elems[7].Elems {
			if string(tip.Str) == "nondeterministic_output_order" {
				out = append(out, strings.ToLower(string(c.Elems[0].Str)))
			}
		}
		if len(c.Elems) > 9 {
			for _, sub := range c.Elems[9].Elems {
				walk(sub)
			}
		}
	}
	for _, c := range v.Elems {
		walk(c)
	}
	return out
}
