package redis

import (
	"testing"

	"github.com/kavach-dev/kavach"
)

// TestContainDecisions: what is withheld where a build shares the
// machine's network, one request at a time on one replay, in order
// (scripts and transactions carry state from one request to the next).
func TestContainDecisions(t *testing.T) {
	migrate := "return redis.call('MiGrAtE', '10.0.0.1', 6379, 'k', 0, 1000)"
	lib := "#!lua name=lib\nredis.register_function('f', function() return redis.call('migrate', 'h', 1, 'k', 0, 1) end)"
	cases := []struct {
		conn uint64
		req  []byte
		raw  bool
		want kavach.ContainAction
	}{
		{1, cmd("SET", "k", "v"), false, kavach.Send},
		{1, cmd("config", "set", "bind", "0.0.0.0 ::"), false, kavach.Withhold},
		{1, cmd("CONFIG", "SET", "port", "6379"), false, kavach.Withhold},
		{1, cmd("CONFIG", "SET", "Protected-Mode", "no"), false, kavach.Withhold},
		{1, cmd("CONFIG", "SET", "tls-port", "6380"), false, kavach.Withhold},
		{1, cmd("CONFIG", "SET", "unixsocket", "/tmp/x"), false, kavach.Withhold},
		{1, cmd("CONFIG", "SET", "dir", "/etc"), false, kavach.Withhold},
		{1, cmd("CONFIG", "SET", "dbfilename", "x"), false, kavach.Withhold},
		{1, cmd("CONFIG", "SET", "masterauth", "x"), false, kavach.Withhold},
		{1, cmd("CONFIG", "SET", "replicaof", "h 1"), false, kavach.Withhold},
		// One contained setting among others withholds the whole request.
		{1, cmd("CONFIG", "SET", "maxmemory", "1mb", "bind", "0.0.0.0"), false, kavach.Withhold},
		{1, cmd("CONFIG", "SET", "maxmemory", "1mb"), false, kavach.Send},
		{1, cmd("CONFIG", "GET", "bind"), false, kavach.Send},
		{1, cmd("replicaof", "10.0.0.1", "6379"), false, kavach.Withhold},
		{1, cmd("SLAVEOF", "10.0.0.1", "6379"), false, kavach.Withhold},
		{1, cmd("REPLICAOF", "no", "one"), false, kavach.Send},
		{1, cmd("migrate", "127.0.0.1", "1", "k", "0", "10"), false, kavach.Withhold},
		{1, cmd("FAILOVER", "TO", "h", "1"), false, kavach.Withhold},
		{1, cmd("CLUSTER", "MEET", "h", "1"), false, kavach.Withhold},
		{1, cmd("CLUSTER", "INFO"), false, kavach.Send},
		{1, cmd("MODULE", "LOAD", "/tmp/x.so"), false, kavach.Withhold},
		{1, cmd("module", "loadex", "/tmp/x.so"), false, kavach.Withhold},
		{1, cmd("MODULE", "LIST"), false, kavach.Send},
		{1, cmd("DEBUG", "SEGFAULT"), false, kavach.Send},
		{1, cmd("SHUTDOWN", "NOSAVE"), false, kavach.Send},
		// Scripts: a body naming MIGRATE, in any case; EVALSHA of it.
		{1, cmd("EVAL", "return 1", "0"), false, kavach.Send},
		{1, cmd("eval", migrate, "0"), false, kavach.Withhold},
		{1, cmd("EVALSHA", sha1hex([]byte(migrate)), "0"), false, kavach.Withhold},
		{1, cmd("EVALSHA", sha1hex([]byte("return 1")), "0"), false, kavach.Send},
		{1, cmd("FCALL", "f", "0"), false, kavach.Send},
		{1, cmd("FUNCTION", "LOAD", "REPLACE", lib), false, kavach.Withhold},
		{1, cmd("FCALL", "f", "0"), false, kavach.Withhold},
		// A transaction: its withheld command, then EXEC sent uncompared;
		// another connection's EXEC is not touched; DISCARD ends it.
		{2, cmd("MULTI"), false, kavach.Send},
		{2, cmd("CONFIG", "SET", "bind", "0.0.0.0"), false, kavach.Withhold},
		{2, cmd("SET", "a", "1"), false, kavach.Send},
		{3, cmd("MULTI"), false, kavach.Send},
		{3, cmd("EXEC"), false, kavach.Send},
		{2, cmd("EXEC"), false, kavach.SendUncompared},
		{2, cmd("EXEC"), false, kavach.Send},
		{2, cmd("MULTI"), false, kavach.Send},
		{2, cmd("MIGRATE", "h", "1", "k", "0", "1"), false, kavach.Withhold},
		{2, cmd("DISCARD"), false, kavach.Send},
		{2, cmd("EXEC"), false, kavach.Send},
		// Inline commands, and bytes the codec could not frame.
		{1, []byte("config set bind 0.0.0.0\r\n"), false, kavach.Withhold},
		{1, []byte("PING\r\n"), false, kavach.Send},
		{1, []byte("*3\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$4\r\nbind"), true, kavach.Withhold},
		{1, []byte("\x00\x01garbage"), true, kavach.Send},
	}
	c := Integration{}.NewContainment()
	for i, tc := range cases {
		got, reply, why := c.Contain(tc.conn, tc.req, tc.raw)
		if got != tc.want {
			t.Errorf("case %d %q: action %d, want %d (%s)", i, tc.req, got, tc.want, why)
		}
		if got == kavach.Withhold && (string(reply) != ContainedReply || why == "") {
			t.Errorf("case %d %q: reply %q, why %q", i, tc.req, reply, why)
		}
		if got == kavach.Send && why != "" {
			t.Errorf("case %d %q: sent, yet why %q", i, tc.req, why)
		}
	}
}

// FuzzContain: any bytes, framed or not, get a decision without panic;
// a withheld request always has Kavach's reply and a reason.
func FuzzContain(f *testing.F) {
	f.Add(cmd("CONFIG", "SET", "bind", "0.0.0.0"), false)
	f.Add(cmd("EVAL", "return redis.call('migrate')", "0"), false)
	f.Add(cmd("MULTI"), false)
	f.Add([]byte("config set port 1\r\n"), true)
	f.Add([]byte("*2\r\n$4\r\nEXEC\r\n"), false)
	f.Fuzz(func(t *testing.T, b []byte, raw bool) {
		c := Integration{}.NewContainment()
		for conn := uint64(1); conn <= 2; conn++ {
			action, reply, why := c.Contain(conn, b, raw)
			if action == kavach.Withhold && (string(reply) != ContainedReply || why == "") {
				t.Fatalf("withheld %q: reply %q, why %q", b, reply, why)
			}
		}
	})
}

// BenchmarkContain is the cost of one decision on a request that is sent
// (the common case) and on one withheld, per request of a contained replay.
func BenchmarkContain(b *testing.B) {
	c := Integration{}.NewContainment()
	get, bind := cmd("GET", "greeting"), cmd("CONFIG", "SET", "bind", "0.0.0.0")
	b.Run("sent", func(b *testing.B) {
		for range b.N {
			c.Contain(1, get, false)
		}
	})
	b.Run("withheld", func(b *testing.B) {
		for range b.N {
			c.Contain(1, bind, false)
		}
	})
}
