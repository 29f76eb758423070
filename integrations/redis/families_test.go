package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/kavach-dev/kavach"
)

// every is a Learned that has every member of every family, and the
// build's type writes.
func every() *Learned {
	l := &Learned{Commands: map[string]bool{}, Types: []TypeWrite{
		{Type: "string", Write: []string{"SET", "", "hello world"}}, {Type: "list", Write: []string{"RPUSH", "", "alpha", "beta", "gamma"}},
		{Type: "set", Write: []string{"SADD", "", "alpha", "beta", "gamma"}}, {Type: "zset", Write: []string{"ZADD", "", "1", "alpha", "2", "beta", "3", "gamma"}},
		{Type: "hash", Write: []string{"HSET", "", "name", "alpha", "count", "3"}}}}
	for _, f := range Families() {
		for _, m := range f.Members {
			l.Commands[m.Command] = true
		}
	}
	return l
}

// sibling finds the sibling made by member, rendered as "SETUP; ...;
// COMMAND ARGS".
func siblingsOf(t *testing.T, l *Learned, command ...string) map[string][]string {
	t.Helper()
	sibs, _ := Siblings(command, l)
	out := map[string][]string{}
	for _, s := range sibs {
		var parts []string
		for _, c := range s.Setup {
			parts = append(parts, strings.Join(c, " "))
		}
		parts = append(parts, strings.Join(s.Args[1:], " "))
		out[s.Args[0]] = append(out[s.Args[0]], strings.Join(parts, "; "))
	}
	return out
}

func TestSiblingsMapArguments(t *testing.T) {
	l := every()
	script := "return redis.call('GET', KEYS[1])"
	sum := sha1.Sum([]byte(script))
	sha := hex.EncodeToString(sum[:])
	cases := []struct {
		command []string
		want    map[string][]string
	}{
		{[]string{"eval", script, "1", "counter", "x"}, map[string][]string{
			"EVAL_RO":    {script + " 1 counter x"},
			"EVALSHA":    {"SCRIPT LOAD " + script + "; " + sha + " 1 counter x"},
			"EVALSHA_RO": {"SCRIPT LOAD " + script + "; " + sha + " 1 counter x"},
			"FCALL":      {"FUNCTION LOAD REPLACE " + Library(script) + "; kavach 1 counter x"},
			"FCALL_RO":   {"FUNCTION LOAD REPLACE " + Library(script) + "; kavach_ro 1 counter x"},
		}},
		// From a SHA1 the script is unknown: only the other EVALSHA form.
		{[]string{"EVALSHA", sha, "0"}, map[string][]string{"EVALSHA_RO": {sha + " 0"}}},
		{[]string{"FCALL_RO", "myfn", "0"}, map[string][]string{"FCALL": {"myfn 0"}}},
		{[]string{"INCRBY", "counter", "-3"}, map[string][]string{
			"DECRBY":       {"counter 3", "counter -3"},
			"INCRBYFLOAT":  {"counter -3"},
			"HINCRBY":      {"HSET kavach:sibling:hash name alpha count 3; kavach:sibling:hash field -3"},
			"HINCRBYFLOAT": {"HSET kavach:sibling:hash name alpha count 3; kavach:sibling:hash field -3"},
			"ZINCRBY":      {"ZADD kavach:sibling:zset 1 alpha 2 beta 3 gamma; kavach:sibling:zset -3 field"},
		}},
		{[]string{"DECR", "counter"}, map[string][]string{
			"INCRBY": {"counter -1"}, "DECRBY": {"counter 1", "counter -1"}, "INCRBYFLOAT": {"counter -1"},
			"HINCRBY":      {"HSET kavach:sibling:hash name alpha count 3; kavach:sibling:hash field -1"},
			"HINCRBYFLOAT": {"HSET kavach:sibling:hash name alpha count 3; kavach:sibling:hash field -1"},
			"ZINCRBY":      {"ZADD kavach:sibling:zset 1 alpha 2 beta 3 gamma; kavach:sibling:zset -1 field"},
		}},
		{[]string{"SET", "greeting", "hello world", "EX", "100"}, map[string][]string{
			"EXPIRE":    {"SET greeting hello world; greeting 100"},
			"PEXPIRE":   {"SET greeting hello world; greeting 100000"},
			"EXPIREAT":  {"SET greeting hello world; greeting 4102444800"},
			"PEXPIREAT": {"SET greeting hello world; greeting 4102444800000"},
			"SETEX":     {"greeting 100 hello world"},
			"PSETEX":    {"greeting 100000 hello world"},
			"GETEX":     {"SET greeting hello world; greeting EX 100"},
		}},
		{[]string{"PEXPIRE", "k", "1500"}, map[string][]string{
			"EXPIRE": {"k 2"}, "EXPIREAT": {"k 4102444800"}, "PEXPIREAT": {"k 4102444800000"},
			"SET": {"k value PX 1500"}, "SETEX": {"k 2 value"}, "PSETEX": {"k 1500 value"}, "GETEX": {"k PX 1500"},
		}},
		{[]string{"LPOP", "queue"}, map[string][]string{
			"RPOP": {"queue"}, "LMPOP": {"1 queue LEFT"}, "BLMPOP": {"0.1 1 queue LEFT"},
			"BLPOP": {"queue 0.1"}, "BRPOP": {"queue 0.1"},
			"ZPOPMIN":  {"ZADD kavach:sibling:zset 1 alpha 2 beta 3 gamma; kavach:sibling:zset"},
			"ZPOPMAX":  {"ZADD kavach:sibling:zset 1 alpha 2 beta 3 gamma; kavach:sibling:zset"},
			"ZMPOP":    {"ZADD kavach:sibling:zset 1 alpha 2 beta 3 gamma; 1 kavach:sibling:zset MIN"},
			"BZMPOP":   {"ZADD kavach:sibling:zset 1 alpha 2 beta 3 gamma; 0.1 1 kavach:sibling:zset MIN"},
			"BZPOPMIN": {"ZADD kavach:sibling:zset 1 alpha 2 beta 3 gamma; kavach:sibling:zset 0.1"},
			"BZPOPMAX": {"ZADD kavach:sibling:zset 1 alpha 2 beta 3 gamma; kavach:sibling:zset 0.1"},
			"SPOP":     {"SADD kavach:sibling:set alpha beta gamma; kavach:sibling:set"},
		}},
		{[]string{"BZMPOP", "5", "2", "a", "b", "MAX", "COUNT", "2"}, map[string][]string{
			"ZPOPMIN": {"a 2"}, "ZPOPMAX": {"a 2"}, "ZMPOP": {"1 a MAX COUNT 2"},
			"BZPOPMIN": {"a 0.1"}, "BZPOPMAX": {"a 0.1"},
			"LPOP":   {"RPUSH kavach:sibling:list alpha beta gamma; kavach:sibling:list 2"},
			"RPOP":   {"RPUSH kavach:sibling:list alpha beta gamma; kavach:sibling:list 2"},
			"LMPOP":  {"RPUSH kavach:sibling:list alpha beta gamma; 1 kavach:sibling:list RIGHT COUNT 2"},
			"BLMPOP": {"RPUSH kavach:sibling:list alpha beta gamma; 0.1 1 kavach:sibling:list RIGHT COUNT 2"},
			"BLPOP":  {"RPUSH kavach:sibling:list alpha beta gamma; kavach:sibling:list 0.1"},
			"BRPOP":  {"RPUSH kavach:sibling:list alpha beta gamma; kavach:sibling:list 0.1"},
			"SPOP":   {"SADD kavach:sibling:set alpha beta gamma; kavach:sibling:set 2"},
		}},
		{[]string{"GETRANGE", "greeting", "-5", "-1"}, map[string][]string{
			"SUBSTR":    {"greeting -5 -1"},
			"LRANGE":    {"RPUSH kavach:sibling:list alpha beta gamma; kavach:sibling:list -5 -1"},
			"ZRANGE":    {"ZADD kavach:sibling:zset 1 alpha 2 beta 3 gamma; kavach:sibling:zset -5 -1"},
			"ZREVRANGE": {"ZADD kavach:sibling:zset 1 alpha 2 beta 3 gamma; kavach:sibling:zset -5 -1"},
		}},
		{[]string{"XREVRANGE", "s", "+", "-", "COUNT", "1"}, map[string][]string{"XRANGE": {"s - + COUNT 1"}}},
	}
	for _, c := range cases {
		got := siblingsOf(t, l, c.command...)
		for m, want := range c.want {
			if !slices.Equal(got[m], want) {
				t.Errorf("%v → %s: got %q, want %q", c.command, m, got[m], want)
			}
		}
		for m := range got {
			if _, ok := c.want[m]; !ok {
				t.Errorf("%v → %s: %q not expected", c.command, m, got[m])
			}
		}
	}
}

// Members the build does not have are skipped and named; a command of no
// family, or one whose arguments do not fit its member, gives nothing.
func TestSiblingsSkipWhatTheBuildLacks(t *testing.T) {
	l := every()
	delete(l.Commands, "FCALL")
	delete(l.Commands, "FCALL_RO")
	sibs, skipped := Siblings([]string{"EVAL", "return 1", "0"}, l)
	if !slices.Equal(skipped, []string{"FCALL", "FCALL_RO"}) {
		t.Errorf("skipped %v, want FCALL, FCALL_RO", skipped)
	}
	for _, s := range sibs {
		if strings.HasPrefix(s.Args[0], "FCALL") {
			t.Errorf("a sibling of a member the build lacks: %v", s.Args)
		}
	}
	if _, skipped := Siblings([]string{"EVAL", "return 1", "0"}, nil); len(skipped) != 5 {
		t.Errorf("nothing learned: skipped %v, want the 5 other members", skipped)
	}
	for _, c := range [][]string{{"GET", "k"}, {"INCRBY", "k"}, {"SET", "k", "v"}, {"LMPOP", "9", "k", "LEFT"}, {}} {
		if sibs, skipped := Siblings(c, l); len(sibs)+len(skipped) != 0 {
			t.Errorf("%q: %d siblings, skipped %v, want none", c, len(sibs), skipped)
		}
	}
}

// Every member of the table is a command of the build at hand, in the
// COMMAND DOCS group its family belongs to.
func TestFamiliesAreTheBuildsCommands(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	s, err := Integration{}.Learn(context.Background(), p.Addr(), []string{"EVAL", "INCRBY", "EXPIRE", "LPOP", "GETRANGE", "XRANGE"})
	if err != nil {
		t.Fatal(err)
	}
	l := s.(*Learned)
	for _, f := range Families() {
		for _, m := range f.Members {
			if !l.Commands[m.Command] {
				t.Errorf("%s (%s): Redis 7.0 has no such command", m.Command, f.Name)
			}
		}
	}
	subs, skipped := Integration{}.Siblings(AppendCommand(nil, []byte("INCRBY"), []byte("k"), []byte("-3")), s)
	if len(skipped) != 0 || len(subs) != 6 {
		t.Errorf("INCRBY k -3: %d siblings, skipped %v; want 6, none", len(subs), skipped)
	}
}

func FuzzSiblings(f *testing.F) {
	for _, c := range []string{"EVAL\x00return 1\x001\x00k", "INCRBY\x00k\x00-3", "SET\x00k\x00v\x00EX\x0010", "BLMPOP\x001\x002\x00a\x00b\x00LEFT\x00COUNT\x002",
		"PEXPIRE\x00k\x009223372036854775807", "ZMPOP\x00-1\x00k\x00MIN", "GETEX\x00k\x00PXAT"} {
		f.Add(c)
	}
	l := every()
	f.Fuzz(func(t *testing.T, s string) {
		command := strings.Split(s, "\x00")
		sibs, _ := Siblings(command, l)
		for _, sib := range sibs {
			if len(sib.Args) == 0 || !l.Commands[sib.Args[0]] || strings.EqualFold(sib.Args[0], command[0]) {
				t.Fatalf("%q: sibling %q", command, sib.Args)
			}
			for _, w := range sib.Setup {
				if len(w) < 2 {
					t.Fatalf("%q: setup %q", command, w)
				}
			}
		}
	})
}

// A member the build at hand does not have (here renamed away, as an
// operator may disable a command) is skipped and named.
func TestSiblingsOfABuildWithoutAMember(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t), Args: []string{"--rename-command", "FCALL_RO", ""}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	s, err := Integration{}.Learn(context.Background(), p.Addr(), []string{"EVAL"})
	if err != nil {
		t.Fatal(err)
	}
	subs, skipped := Siblings([]string{"EVAL", "return 1", "0"}, s.(*Learned))
	if !slices.Equal(skipped, []string{"FCALL_RO"}) || len(subs) != 4 {
		t.Errorf("EVAL on a build without FCALL_RO: %d siblings, skipped %v; want 4, FCALL_RO", len(subs), skipped)
	}
}

// The requests that set state no key names, of the connection or of the
// server, for a long recording's dependency slice; the others set none.
func TestSetsState(t *testing.T) {
	for _, tc := range []struct {
		req  []byte
		want kavach.StateScope
	}{
		{cmd("SELECT", "2"), kavach.ConnState},
		{cmd("auth", "secret"), kavach.ConnState},
		{cmd("HELLO", "3"), kavach.ConnState},
		{cmd("CLIENT", "reply", "OFF"), kavach.ConnState},
		{cmd("CLIENT", "TRACKING", "ON"), kavach.ConnState},
		{cmd("MULTI"), kavach.ConnState},
		{cmd("EXEC"), kavach.ConnState},
		{cmd("SCRIPT", "LOAD", "return 1"), kavach.ServerState},
		{cmd("FUNCTION", "LOAD", "#!lua name=f\n"), kavach.ServerState},
		{cmd("CLIENT", "LIST"), kavach.NoState},
		{cmd("SCRIPT", "EXISTS", "abc"), kavach.NoState},
		{cmd("SET", "k", "v"), kavach.NoState},
		{cmd("EVALSHA", "abc", "0"), kavach.NoState},
		{[]byte("*1\r\n$3\r\nSE"), kavach.NoState}, // cut short
	} {
		if got := (Integration{}).SetsState(tc.req); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.req, got, tc.want)
		}
	}
}
