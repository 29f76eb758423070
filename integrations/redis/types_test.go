package redis

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
)

// The types of key and where keys are come from the build itself: TYPE
// of a key each write made, COMMAND INFO of each command.
func TestLearnTypesAndKeysFromTheBuild(t *testing.T) {
	p, err := Launcher{}.Start(kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	s, err := Launcher{}.Learn(context.Background(), p.Addr(), []string{"INCRBY", "MSET", "PING", "NOSUCHCMD"})
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
	for _, s := range (Codec{}).Substitutions(cmd("MSET", "a", "1", "b", "2"), l) {
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
		if s := (Codec{}).Substitutions(req, l); len(s) != 0 {
			t.Errorf("%q: %d substitutions, want none", req, len(s))
		}
	}
	if s := (Codec{}).Substitutions(cmd("MSET", "a", "1"), Schema{}); len(s) != 0 {
		t.Errorf("without a learned schema: %d substitutions", len(s))
	}
}
