package redis

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/launch"
)

func TestOrderFreeRepliesAcrossProcesses(t *testing.T) {
	// Two processes of one build answer COMMAND and its listings in the
	// order of their own hash tables: normalized, the replies are equal.
	ask := func(addr string, reqs [][]byte) [][]byte {
		conn, err := launch.DialTimeout(addr, 5*time.Second)
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
		p, err := Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t)})
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
		a, b := Integration{}.Normalize(req, replies[0][i]), Integration{}.Normalize(req, replies[1][i])
		if key(a) != key(b) {
			t.Errorf("%q (RESP%d): normalized replies differ between processes", req, map[bool]int{true: 3, false: 2}[i >= 5])
		}
	}
}

func TestRawCommandDigests(t *testing.T) {
	// The digests read from the bytes treat every level as a multiset, and
	// leave what they do not read to the parsed path.
	docs := func(order ...int) []byte {
		entries := [][]byte{
			[]byte("$3\r\nget\r\n*4\r\n$7\r\nsummary\r\n$9\r\nGet a key\r\n$9\r\narguments\r\n*2\r\n:1\r\n:2\r\n"),
			[]byte("$3\r\nset\r\n*2\r\n$7\r\nsummary\r\n$9\r\nSet a key\r\n"),
		}
		out := []byte("*4\r\n")
		for _, i := range order {
			out = append(out, entries[i]...)
		}
		return out
	}
	req := cmd("COMMAND", "DOCS")
	a, b := rawCommandDigests(req, docs(0, 1)), rawCommandDigests(req, docs(1, 0))
	if a == nil || key(a) != key(b) || len(a) != 2 {
		t.Fatalf("digests %v and %v: want two commands, equal in any order", a, b)
	}
	changed := bytes.Replace(docs(0, 1), []byte("Set a key"), []byte("Set a kex"), 1)
	if c := rawCommandDigests(req, changed); c == nil || c["set"] == a["set"] || c["get"] != a["get"] {
		t.Errorf("a changed summary: %v, want set's digest only to change", c)
	}
	for _, bad := range [][]byte{[]byte("-ERR nope\r\n"), []byte("*3\r\n$3\r\nget\r\n"), []byte("|1\r\n+a\r\n+b\r\n*0\r\n")} {
		if d := rawCommandDigests(req, bad); d != nil {
			t.Errorf("%q: %v, want nil (parsed instead)", bad, d)
		}
	}
	if d := rawCommandDigests(cmd("COMMAND", "COUNT"), []byte(":240\r\n")); d != nil {
		t.Errorf("COMMAND COUNT: %v, want nil", d)
	}
}

// The digest of each COMMAND reply entry is remembered by its bytes
// (entryHashes): the same reply in another order gives the same digests
// whether remembered or not, and an entry one byte apart gets its own.
// Planted: a lookup that ignored the entry's bytes would give cmd042
// its old digest.
func TestCommandDigestsRemembered(t *testing.T) {
	req := cmd("COMMAND", "DOCS")
	entry := func(i int, what string) string {
		name := fmt.Sprintf("cmd%03d", i)
		return fmt.Sprintf("$6\r\n%s\r\n*2\r\n$7\r\nsummary\r\n$60\r\n%-60s\r\n", name, what+" "+name)
	}
	reply := func(order []int, what map[int]string) []byte {
		b := []byte(fmt.Sprintf("*%d\r\n", 2*len(order)))
		for _, i := range order {
			w, ok := what[i]
			if !ok {
				w = "what does"
			}
			b = append(b, entry(i, w)...)
		}
		return b
	}
	order := make([]int, 100)
	for i := range order {
		order[i] = i
	}
	entryHashes.Lock()
	entryHashes.m = nil
	entryHashes.Unlock()
	first := rawCommandDigests(req, reply(order, nil))
	slices.Reverse(order)
	again := rawCommandDigests(req, reply(order, nil))
	if len(first) != 100 || key(first) != key(again) {
		t.Fatalf("digests of one reply in two orders differ (%d entries)", len(first))
	}
	entryHashes.Lock()
	remembered := len(entryHashes.m)
	entryHashes.m = nil
	entryHashes.Unlock()
	if remembered != 100 {
		t.Errorf("%d entries remembered, want 100", remembered)
	}
	if fresh := rawCommandDigests(req, reply(order, nil)); key(fresh) != key(first) {
		t.Errorf("digests computed afresh differ from remembered ones")
	}
	changed := rawCommandDigests(req, reply(order, map[int]string{42: "what did!"}))
	if changed["cmd042"] == first["cmd042"] || changed["cmd041"] != first["cmd041"] {
		t.Errorf("an entry one summary apart: cmd042 %v (was %v), cmd041 %v (was %v)", changed["cmd042"], first["cmd042"], changed["cmd041"], first["cmd041"])
	}
}

func FuzzRawCommandDigests(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nget\r\n*2\r\n$7\r\nsummary\r\n$1\r\nx\r\n"))
	f.Add([]byte("*1\r\n*3\r\n$3\r\nget\r\n:2\r\n*-1\r\n"))
	f.Add([]byte("%1\r\n$3\r\nget\r\n%1\r\n+a\r\n_\r\n"))
	f.Add([]byte("*2\r\n_\r\n*1\r\n$1\r\na\r\n"))
	f.Fuzz(func(t *testing.T, reply []byte) {
		for _, req := range [][]byte{cmd("COMMAND"), cmd("COMMAND", "DOCS"), cmd("COMMAND", "INFO")} {
			a := rawCommandDigests(req, reply)
			if b := rawCommandDigests(req, reply); key(a) != key(b) {
				t.Fatalf("not deterministic on %q", reply)
			}
			Integration{}.Normalize(req, reply) // never panics
		}
	})
}

// HELLO's reply hides the connection's id and the build's version, in
// RESP3's map and RESP2's flat list; the rest of it is compared.
func TestHelloHidesIdAndVersion(t *testing.T) {
	hello := func(proto, version, id, mode string) []byte {
		bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
		body := bulk("version") + bulk(version) + bulk("proto") + ":" + proto + "\r\n" + bulk("id") + ":" + id + "\r\n" + bulk("mode") + bulk(mode)
		if proto == "3" {
			return []byte("%4\r\n" + body)
		}
		return []byte("*8\r\n" + body)
	}
	for _, proto := range []string{"2", "3"} {
		req := cmd("HELLO", proto)
		a := Integration{}.Normalize(req, hello(proto, "7.0.15", "7", "standalone"))
		if b := (Integration{}).Normalize(req, hello(proto, "7.2.4", "12", "standalone")); key(a) != key(b) {
			t.Errorf("HELLO %s: another version and id compare unequal: %v, %v", proto, a, b)
		}
		if c := (Integration{}).Normalize(req, hello(proto, "7.0.15", "7", "cluster")); key(a) == key(c) {
			t.Errorf("HELLO %s: another mode compares equal: %v", proto, a)
		}
	}
}

// smallInt reads what strconv.Atoi reads, up to 18 digits.
func FuzzSmallInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "+7", "240", "", "-", "1x", "123456789012345678", "1234567890123456789"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := smallInt(b)
		want, err := strconv.Atoi(string(b))
		digits := len(bytes.TrimLeft(b, "+-"))
		switch {
		case ok && (err != nil || got != want):
			t.Fatalf("smallInt(%q) = %d, Atoi: %d, %v", b, got, want, err)
		case !ok && err == nil && digits <= 18 && len(b)-digits <= 1:
			t.Fatalf("smallInt(%q) refused what Atoi reads (%d)", b, want)
		}
	})
}
