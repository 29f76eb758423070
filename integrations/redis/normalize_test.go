package redis

import (
	"bufio"
	"net"
	"testing"

	"github.com/kavach-dev/kavach"
)

func TestOrderFreeRepliesAcrossProcesses(t *testing.T) {
	// Two processes of one build answer COMMAND and its listings in the
	// order of their own hash tables: normalized, the replies are equal.
	ask := func(addr string, reqs [][]byte) [][]byte {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		var out [][]byte
		for _, req := range reqs {
			conn.Write(req)
			v, err := readReply(r)
			if err != nil {
				t.Fatal(err)
			}
			buf := v.Raw
			out = append(out, buf)
		}
		return out
	}
	reqs := [][]byte{cmd("COMMAND"), cmd("COMMAND", "DOCS"), cmd("COMMAND", "INFO"), cmd("COMMAND", "LIST"),
		cmd("HELLO", "3"), cmd("COMMAND", "DOCS"), cmd("COMMAND", "INFO")}
	var replies [2][][]byte
	for i := range replies {
		p, err := Launcher{}.Start(kavach.Launch{Path: redisServer(t)})
		if err != nil {
			t.Fatal(err)
		}
		replies[i] = ask(p.Addr(), reqs)
		p.Stop()
	}
	if string(replies[0][0]) == string(replies[1][0]) {
		t.Fatal("two processes answered COMMAND in the same order: the test shows nothing")
	}
	for i, req := range reqs {
		a, b := Codec{}.Normalize(req, replies[0][i]), Codec{}.Normalize(req, replies[1][i])
		if key(a) != key(b) {
			t.Errorf("%q (RESP%d): normalized replies differ between processes", req, map[bool]int{true: 3, false: 2}[i >= 5])
		}
	}
}
