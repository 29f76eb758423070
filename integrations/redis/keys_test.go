package redis

import (
	"context"
	"fmt"
	"testing"

	"github.com/kavach-dev/kavach"
)

func TestKeysFromTheServersKeySpecs(t *testing.T) {
	p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
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
		cmd("GET", "a"),      // reads a
		cmd("GETRANGE", "a", "0", "2"),
		cmd("LMOVE", "a", "b", "LEFT", "RIGHT"), // writes both
		cmd("EVAL", "return redis.call('GET', KEYS[1])", "1", "a"), // a script writes what it names
		cmd("EVAL_RO", "return 1", "1", "a"),                       // a script still
		cmd("EVAL", "return 1", "0"),                               // undeclared keys: anything
		cmd("OBJECT", "ENCODING", "a"),                             // a subcommand that reads
		cmd("SET", "a", "1", "GET"),                                // reads a before it replaces it
		cmd("DEL", "a", "b"),                                       // removes both
		cmd("APPEND", "a", "x"),                                    // reads and writes a
	}
	got, writes, replaces := Integration{}.Keys(context.Background(), p.Addr(), reqs)
	want := []string{"[a]", "[b c]", "[]", "unknown", "unknown", "unknown", "[]", "[a]",
		"[a]", "[a]", "[a b]", "[a]", "[a]", "unknown", "[a]", "[a]", "[a b]", "[a]"}
	wantWrites := []string{"[a]", "[b c]", "[]", "[]", "unknown", "unknown", "[]", "[a]",
		"[]", "[]", "[a b]", "[a]", "[a]", "unknown", "[]", "[a]", "[a b]", "[a]"}
	// Replaced whole, as the key flags say (OW, RM): SET and MSET's
	// keys, DEL's; not LMOVE's (it reads them), a script's, SET ... GET's
	// or APPEND's.
	wantReplaces := []string{"[a]", "[b c]", "[]", "[]", "[]", "[]", "[]", "[a]",
		"[]", "[]", "[]", "[]", "[]", "[]", "[]", "[]", "[a b]", "[]"}
	show := func(k []string) string {
		if k == nil {
			return "unknown"
		}
		return fmt.Sprint(k)
	}
	if len(got) != len(reqs) || len(writes) != len(reqs) {
		t.Fatalf("%d keys, %d writes for %d requests", len(got), len(writes), len(reqs))
	}
	for i := range reqs {
		if s := show(got[i]); s != want[i] {
			t.Errorf("%q: keys %s, want %s", reqs[i], s, want[i])
		}
		if s := show(writes[i]); s != wantWrites[i] {
			t.Errorf("%q: writes %s, want %s", reqs[i], s, wantWrites[i])
		}
		if s := fmt.Sprint(append([]string{}, replaces[i]...)); s != wantReplaces[i] {
			t.Errorf("%q: replaces %s, want %s", reqs[i], s, wantReplaces[i])
		}
	}
	if got, writes, _ := (Integration{}).Keys(context.Background(), "127.0.0.1:1", reqs[:1]); len(got) != 1 || got[0] != nil || writes[0] != nil {
		t.Errorf("no server: %v %v, want unknown", got, writes)
	}
}
