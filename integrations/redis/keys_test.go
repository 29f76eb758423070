package redis

import (
	"context"
	"fmt"
	"testing"

	"github.com/kavach-dev/kavach"
)

func TestKeysFromTheServersKeySpecs(t *testing.T) {
	p, err := Launcher{}.Start(kavach.Launch{Path: redisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	reqs := [][]byte{
		cmd("SET", "a", "1"),
		cmd("MSET", "b", "2", "c", "3"),
		cmd("PING", "hi"),    // no key arguments, not a keyspace command
		cmd("DBSIZE"),        // no key arguments, reads the whole keyspace
		cmd("FLUSHALL"),      // writes every key
		cmd("NOSUCHCMD"),     // the server cannot place it
		cmd("GET"),           // wrong arity: an error, which touches nothing
		cmd("SET", "a", "1"), // asked once, answered the same
	}
	got := Launcher{}.Keys(context.Background(), p.Addr(), reqs)
	want := []string{"[a]", "[b c]", "[]", "unknown", "unknown", "unknown", "[]", "[a]"}
	for i, k := range got {
		s := fmt.Sprint(k)
		if k == nil {
			s = "unknown"
		}
		if s != want[i] {
			t.Errorf("%q: keys %s, want %s", reqs[i], s, want[i])
		}
	}
	if got := (Launcher{}).Keys(context.Background(), "127.0.0.1:1", reqs[:1]); len(got) != 1 || got[0] != nil {
		t.Errorf("no server: %v, want unknown", got)
	}
}
