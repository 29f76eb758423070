package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
)

// The types of key and where keys are come from the build itself: TYPE
// of a key each write made, COMMAND INFO of each command.
func TestLearnTypesAndKeysFromTheBuild(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	s, err := Integration{}.Learn(context.Background(), p.Addr(), []string{"INCRBY", "MSET", "PING", "NOSUCHCMD"})
	if err != nil {
		t.Fatal(err)
	}
	l := s.(*Learned)
	var types []string
	for _, tw := range l.Types {
		types = append(types, tw.Type+" "+tw.Write[0])
	}
	// GEOADD makes a zset and PFADD a string: each type once.
	if diff := cmp.Diff([]string{"string SET", "list RPUSH", "set SADD", "zset ZADD", "hash HSET", "stream XADD"}, types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	want := map[string]KeyRange{"INCRBY": {1, 1, 1}, "MSET": {1, -1, 2}, "PING": {0, 0, 0}}
	got := map[string]KeyRange{}
	for _, c := range []string{"INCRBY", "MSET", "PING", "NOSUCHCMD"} {
		if kr, ok := l.Keys[c]; ok {
			got[c] = kr
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("key ranges (-want +got):\n%s", diff)
	}
	if len(l.Args["INCRBY"]) != 2 {
		t.Errorf("INCRBY's arguments: %+v", l.Args["INCRBY"])
	}
	// The learn left no key behind.
	if v, err := call(t.Context(), p.Addr(), "DBSIZE"); err != nil || v.Int != 0 {
		t.Errorf("DBSIZE after learning: %+v, %v", v, err)
	}
}

func TestSubstitutionsAtEveryKey(t *testing.T) {
	l := &Learned{Keys: map[string]KeyRange{"MSET": {1, -1, 2}, "PING": {}},
		Types: []TypeWrite{{Type: "hash", Write: []string{"HSET", "", "f", "v"}}}}
	var got []string
	for _, s := range (Integration{}).Substitutions(cmd("MSET", "a", "1", "b", "2"), l) {
		got = append(got, fmt.Sprintf("%s|%q|%q", s.What, s.Setup, s.Request))
	}
	want := []string{
		`argument 1 (key) "a" → a hash key (HSET kavach:type:hash f v)|["*4\r\n$4\r\nHSET\r\n$16\r\nkavach:type:hash\r\n$1\r\nf\r\n$1\r\nv\r\n"]|"*5\r\n$4\r\nMSET\r\n$16\r\nkavach:type:hash\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"`,
		`argument 3 (key) "b" → a hash key (HSET kavach:type:hash f v)|["*4\r\n$4\r\nHSET\r\n$16\r\nkavach:type:hash\r\n$1\r\nf\r\n$1\r\nv\r\n"]|"*5\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$16\r\nkavach:type:hash\r\n$1\r\n2\r\n"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, req := range [][]byte{cmd("PING", "x"), cmd("GET", "a"), []byte("garbage")} {
		if s := (Integration{}).Substitutions(req, l); len(s) != 0 {
			t.Errorf("%q: %d substitutions, want none", req, len(s))
		}
	}
	if s := (Integration{}).Substitutions(cmd("MSET", "a", "1"), Schema{}); len(s) != 0 {
		t.Errorf("without a learned schema: %d substitutions", len(s))
	}
}

// keySpecRequests are requests whose keys the server finds by reading
// their arguments (a count of keys, a keyword), with a few it finds by
// position, and the keys COMMAND GETKEYS names in each.
var keySpecRequests = [][]string{
	{"EVAL", "return 1", "2", "ka", "kb", "arg"},
	{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "1", "ka", "arg"},
	{"FCALL", "fn", "2", "ka", "kb", "arg"},
	{"EVAL_RO", "return 1", "0", "arg"},
	{"XREAD", "COUNT", "2", "STREAMS", "ka", "kb", "0-0", "0-0"},
	{"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "ka", "kb", "0", "0"},
	{"ZUNIONSTORE", "dest", "2", "ka", "kb", "WEIGHTS", "1", "-1"},
	{"ZINTERSTORE", "dest", "3", "ka", "kb", "kc"},
	{"ZUNION", "2", "ka", "kb", "WITHSCORES"},
	{"LMPOP", "2", "ka", "kb", "LEFT", "COUNT", "2"},
	{"BLMPOP", "0.1", "2", "ka", "kb", "RIGHT"},
	{"ZMPOP", "1", "ka", "MIN"},
	{"SINTERCARD", "2", "ka", "kb", "LIMIT", "1"},
	{"MIGRATE", "host", "6379", "", "0", "5000", "KEYS", "ka", "kb"},
	{"MIGRATE", "host", "6379", "ka", "0", "5000", "COPY"},
	{"GEORADIUS", "ka", "13", "38", "10", "km", "STORE", "kb"},
	{"XINFO", "STREAM", "ka"},
	{"OBJECT", "ENCODING", "ka"},
	{"BITOP", "AND", "dest", "ka", "kb"},
	{"MSET", "ka", "1", "kb", "2"},
	{"INCRBY", "ka", "-3"},
}

// Key positions come from the server's key specs, read for the request as
// the server reads them: they agree with what COMMAND GETKEYS says of
// each request, where first/last/step (what placed keys before) names
// none of EVAL's, XREAD's, LMPOP's keys and only ZUNIONSTORE's
// destination.
func TestKeysFromKeySpecs(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var kinds []string
	for _, r := range keySpecRequests {
		kinds = append(kinds, r[0])
	}
	kinds = append(kinds, "SORT")
	s, err := Integration{}.Learn(t.Context(), p.Addr(), kinds)
	if err != nil {
		t.Fatal(err)
	}
	l := s.(*Learned)
	for _, r := range keySpecRequests {
		v, err := call(t.Context(), p.Addr(), append([]string{"COMMAND", "GETKEYS"}, r...)...)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, e := range v.Elems {
			want = append(want, string(e.Str))
		}
		var got []string
		for _, i := range keysAt(l, r) {
			got = append(got, r[i+1])
		}
		if v.Kind == KindError && strings.Contains(string(v.Str), "no key arguments") {
			want = nil
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q: keys (-COMMAND GETKEYS +key specs):\n%s", r, diff)
		}
	}
	// SORT's key specs for BY/GET and STORE are "unknown" on Redis 7.0:
	// the server reads those arguments with code of its own (COMMAND
	// GETKEYS names dst), and the specs place the sorted key only.
	if got := keysAt(l, []string{"SORT", "ka", "BY", "w_*", "GET", "#", "STORE", "dst"}); !slices.Equal(got, []int{0}) {
		t.Errorf("SORT ... STORE dst: keys at %v, want the sorted key's (0) only", got)
	}
	// What placed keys before: first, last and step.
	for _, name := range []string{"EVAL", "XREAD", "LMPOP"} {
		if kr := l.Keys[name]; kr.First != 0 {
			t.Errorf("%s: COMMAND INFO first key %d: the test assumes the build places none there", name, kr.First)
		}
	}
}

// EVAL, XREAD ... STREAMS, ZUNIONSTORE and LMPOP get type variants on
// every key they name, each key on a key of every type the build has.
func TestSubstitutionsAtKeysFromKeySpecs(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	s, err := Integration{}.Learn(t.Context(), p.Addr(), []string{"EVAL", "XREAD", "ZUNIONSTORE", "LMPOP"})
	if err != nil {
		t.Fatal(err)
	}
	l := s.(*Learned)
	for _, tt := range []struct {
		req  []string
		keys []int // argument positions (1 the first after the name)
	}{
		{[]string{"EVAL", "return redis.call('GET', KEYS[1])", "2", "ka", "kb", "arg"}, []int{3, 4}},
		{[]string{"XREAD", "COUNT", "2", "STREAMS", "ka", "kb", "0-0", "0-0"}, []int{4, 5}},
		{[]string{"ZUNIONSTORE", "dest", "2", "ka", "kb", "WEIGHTS", "1", "-1"}, []int{1, 3, 4}},
		{[]string{"LMPOP", "2", "ka", "kb", "LEFT", "COUNT", "2"}, []int{2, 3}},
	} {
		got := map[string]int{}
		for _, sub := range (Integration{}).Substitutions(cmd(tt.req...), s) {
			var pos int
			var typ string
			if _, err := fmt.Sscanf(sub.What, "argument %d (key)", &pos); err != nil {
				t.Fatalf("%q: %s", tt.req, sub.What)
			}
			typ = sub.What[strings.Index(sub.What, "→ a ")+len("→ a ") : strings.Index(sub.What, " key (")]
			got[fmt.Sprint(pos, " ", typ)]++
			c, err := ParseCommand(sub.Request)
			if err != nil || string(c.Args[pos]) != "kavach:type:"+typ {
				t.Errorf("%q: %s: request %s", tt.req, sub.What, c)
			}
		}
		want := map[string]int{}
		for _, k := range tt.keys {
			for _, tw := range l.Types {
				want[fmt.Sprint(k, " ", tw.Type)] = 1
			}
		}
		if len(l.Types) < 6 {
			t.Fatalf("the build has %d types of key, want 6", len(l.Types))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q: type variants by argument and type (-want +got):\n%s", tt.req, diff)
		}
	}
}

// Before Redis 7 a command has no key specs: its first key, last key and
// step place its keys; a key spec placing nothing (a count past the end)
// places nothing.
func TestKeysAtWithoutKeySpecs(t *testing.T) {
	l := &Learned{Keys: map[string]KeyRange{"MSET": {1, -1, 2}, "LMPOP": {}},
		Specs: map[string][]KeySpec{"LMPOP": {{Index: 1, KeyNum: true, FirstKey: 1, KeyStep: 1}}}}
	if got := keysAt(l, []string{"MSET", "a", "1", "b", "2"}); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("MSET by first/last/step: %v", got)
	}
	if got := keysAt(l, []string{"LMPOP", "2", "a", "b", "LEFT"}); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("LMPOP by its key spec: %v", got)
	}
	for _, bad := range [][]string{{"LMPOP", "9", "a", "LEFT"}, {"LMPOP", "x", "a"}, {"LMPOP"}} {
		if got := keysAt(l, bad); len(got) != 0 {
			t.Errorf("%q: keys at %v, want none", bad, got)
		}
	}
}
