package redis

import (
	"fmt"
	"strings"
	"testing"
)

// TestIdentities: ids learnt from the replies that show one, as recorded
// and as replayed, are mapped in every request form that names one; an
// id not learnt, and every other request, go as recorded.
func TestIdentities(t *testing.T) {
	m := Integration{}.NewIdentities()
	for _, tc := range []struct {
		req                []byte
		recorded, replayed string
	}{
		{cmd("CLIENT", "ID"), ":459\r\n", ":12\r\n"},
		{cmd("HELLO", "3"), "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$2\r\nid\r\n:460\r\n", "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$2\r\nid\r\n:13\r\n"},
		{cmd("CLIENT", "INFO"), "$27\r\nid=461 addr=1.2.3.4:5 age=0\r\n", "$26\r\nid=14 addr=1.2.3.4:5 age=0\r\n"},
	} {
		if !m.Shows(tc.req) {
			t.Fatalf("Shows(%q) = false", tc.req)
		}
		m.Learn(tc.req, []byte(tc.recorded), []byte(tc.replayed))
	}
	for _, tc := range []struct{ in, want []byte }{
		{cmd("CLIENT", "UNBLOCK", "459"), cmd("CLIENT", "UNBLOCK", "12")},
		{cmd("client", "unblock", "460", "ERROR"), cmd("client", "unblock", "13", "ERROR")},
		{cmd("CLIENT", "KILL", "ID", "461"), cmd("CLIENT", "KILL", "ID", "14")},
		{cmd("CLIENT", "KILL", "SKIPME", "no", "id", "459"), cmd("CLIENT", "KILL", "SKIPME", "no", "id", "12")},
		{cmd("CLIENT", "TRACKING", "on", "REDIRECT", "460", "BCAST"), cmd("CLIENT", "TRACKING", "on", "REDIRECT", "13", "BCAST")},
		{cmd("CLIENT", "LIST", "ID", "459", "999", "461"), cmd("CLIENT", "LIST", "ID", "12", "999", "14")},
		{cmd("CLIENT", "UNBLOCK", "999"), cmd("CLIENT", "UNBLOCK", "999")},
		{cmd("CLIENT", "KILL", "127.0.0.1:459"), cmd("CLIENT", "KILL", "127.0.0.1:459")},
		{cmd("GET", "459"), cmd("GET", "459")},
		{[]byte("CLIENT UNBLOCK 459\r\n"), cmd("CLIENT", "UNBLOCK", "12")},
	} {
		if got := m.Map(tc.in); string(got) != string(tc.want) {
			t.Errorf("Map(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, req := range [][]byte{cmd("CLIENT", "LIST"), cmd("PING"), cmd("CLIENT", "ID", "x")} {
		if m.Shows(req) {
			t.Errorf("Shows(%q) = true", req)
		}
	}
}

// TestDataFileNormalized: the data file a replica is sent compares as a
// placeholder, whatever its bytes; the commands of the replication
// stream after it compare as commands.
func TestDataFileNormalized(t *testing.T) {
	file := func(replid string) []byte {
		rdb := "REDIS0010\xfa\x07repl-id(" + replid + "\xff12345678"
		return []byte(fmt.Sprintf("$%d\r\n%s", len(rdb), rdb))
	}
	in := Integration{}
	a, b := in.Normalize(cmd("SYNC"), file(strings.Repeat("a", 40))), in.Normalize(cmd("SYNC"), file(strings.Repeat("b", 40)))
	if a != "<data file>" || b != a {
		t.Errorf("data files normalize to %v and %v, want <data file>", a, b)
	}
	if got := fmt.Sprint(in.Normalize(cmd("SYNC"), cmd("SET", "k", "v"))); got != "[SET k v]" {
		t.Errorf("a command of the stream normalizes to %s", got)
	}
	if got := in.Normalize(cmd("PSYNC", "?", "-1"), []byte("+FULLRESYNC "+strings.Repeat("c", 40)+" 0\r\n")); got != "<fullresync>" {
		t.Errorf("+FULLRESYNC normalizes to %v", got)
	}
}
