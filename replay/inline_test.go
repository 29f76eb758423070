package replay

import (
	"net"
	"testing"
	"time"

	"github.com/kavach-dev/kavach/integrations/redis"
)

// inlinePair is a runner holding one inline connection to a loopback
// socket whose other end the test writes as the build would.
func inlinePair(t *testing.T) (*runner, *conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	build, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close(); build.Close() })
	r := &runner{opts: Options{Integration: redis.Integration{}}, wake: make(chan struct{}, 1), conns: map[uint64]*conn{}}
	c := &conn{id: 1, nc: nc}
	r.conns[1], r.order = c, []*conn{c}
	if !r.makeInline(c) {
		t.Fatal("a TCP connection is not read inline")
	}
	return r, c, build
}

// framesOf takes what c's reader (inline or not) has framed so far.
func framesOf(c *conn) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, f := range c.frames {
		out = append(out, string(f))
	}
	c.frames = nil
	return out
}

// TestInlineWaitsForWholeReplies: a reply written in two parts, a moment
// apart, ends the wait once, whole; a wait that nothing ends reports so
// after its time; two replies that come together are two frames.
func TestInlineWaitsForWholeReplies(t *testing.T) {
	r, c, build := inlinePair(t)
	if r.waitInline(5 * time.Millisecond) {
		t.Fatal("a wait with nothing sent reported a reply")
	}
	build.Write([]byte("$10\r\nhello"))
	go func() {
		time.Sleep(20 * time.Millisecond)
		build.Write([]byte("world\r\n+OK\r\n:1\r\n"))
	}()
	began := time.Now()
	for !r.waitInline(time.Second) {
		if time.Since(began) > 5*time.Second {
			t.Fatal("the reply never ended the wait")
		}
	}
	got := framesOf(c)
	if len(got) != 3 || got[0] != "$10\r\nhelloworld\r\n" || got[1] != "+OK\r\n" || got[2] != ":1\r\n" {
		t.Fatalf("framed %q, want the bulk string whole, then +OK and :1", got)
	}
	if r.frames.Load() != 3 || len(r.wake) != 0 {
		t.Errorf("frames counted %d (want 3), wake pending %d (want 0: the runner read them itself)", r.frames.Load(), len(r.wake))
	}
}

// TestInlineHandsOver: a second connection opened while half a reply is
// read hands the first to a reader goroutine with that half, which frames
// the reply whole once the rest comes; and the deadline of no earlier
// wait ends the reader's read.
func TestInlineHandsOver(t *testing.T) {
	r, c, build := inlinePair(t)
	build.Write([]byte("$10\r\nhello"))
	for r.readNow(); len(c.fr.data) == 0; r.readNow() {
		time.Sleep(time.Millisecond)
	}
	r.waitInline(time.Millisecond) // leaves nothing behind on the socket
	r.unline()
	if r.inline != nil || c.inline {
		t.Fatal("still inline after the hand-over")
	}
	time.Sleep(20 * time.Millisecond)
	build.Write([]byte("world\r\n"))
	select {
	case <-r.wake:
	case <-time.After(5 * time.Second):
		t.Fatal("the reader never framed the rest")
	}
	if got := framesOf(c); len(got) != 1 || got[0] != "$10\r\nhelloworld\r\n" {
		t.Fatalf("framed %q, want the bulk string whole", got)
	}
}

// TestInlineEnd: a connection the build closes ends the wait, is no
// longer read inline, and its end is pushed as a reader's would be, after
// the replies before it.
func TestInlineEnd(t *testing.T) {
	r, c, build := inlinePair(t)
	build.Write([]byte("+OK\r\n"))
	build.Close()
	for began := time.Now(); r.inline != nil; {
		r.waitInline(time.Second)
		if time.Since(began) > 5*time.Second {
			t.Fatal("the end never came")
		}
	}
	r.poll()
	if !c.ended || c.err == nil {
		t.Errorf("ended %v, err %v: want the end taken", c.ended, c.err)
	}
	if r.taken != 2 {
		t.Errorf("taken %d, want the reply and the end", r.taken)
	}
}

// TestInlineHangUp: what the build sent before the recorded client
// closed the connection is taken in, and the connection ends.
func TestInlineHangUp(t *testing.T) {
	r, c, build := inlinePair(t)
	build.Write([]byte("+OK\r\n"))
	time.Sleep(20 * time.Millisecond)
	r.hangUpInline(c)
	if r.inline != nil {
		t.Fatal("still inline after the hang-up")
	}
	if got := framesOf(c); len(got) != 1 || got[0] != "+OK\r\n" {
		t.Errorf("framed %q, want +OK", got)
	}
}
