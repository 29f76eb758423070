package record

import (
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
)

// TestRoomForLargeValue: once a large value's header has come, the
// copier's buffer is made as large as the whole message at once, and not
// grown again as the rest comes (each growth would be another copy of it
// in memory).
func TestRoomForLargeValue(t *testing.T) {
	const size = 8 << 20
	p := &Proxy{opts: Options{Codec: redis.Integration{}, MaxFrame: 64 << 20}, ab: redis.Integration{}.Abilities()}
	head := []byte("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$8388608\r\n")
	whole := len(head) + size + 2
	chunk := make([]byte, 64<<10)
	copy(chunk, head)
	var pending []byte
	grown := 0
	for len(pending)+len(chunk) < whole {
		before := cap(pending)
		pending = p.room(pending, len(chunk), kavach.Request)
		pending = append(pending, chunk...)
		if cap(pending) != before {
			grown++
		}
		// Room for what was declared only once an eighth of it has come.
		if have := len(pending); cap(pending) > 8*have && cap(pending) > 2*have+len(chunk) {
			t.Fatalf("buffer of %d bytes with %d come", cap(pending), have)
		}
	}
	if cap(pending) < whole || grown > 6 {
		t.Errorf("buffer of %d bytes after growing %d times for a message of %d; want it grown by doubling up to an eighth, then once for the whole message", cap(pending), grown, whole)
	}
	// A client that declares a large value and stalls: no room for what
	// it only declared.
	stalled := append(make([]byte, 0, len(chunk)), chunk...)
	if got := p.room(stalled, len(chunk), kavach.Request); cap(got) > 4*len(chunk) {
		t.Errorf("room of %d bytes for %d come and %d declared", cap(got), 2*len(chunk), whole)
	}
	// Past the size limit, no room is made: the message is recorded raw.
	p.opts.MaxFrame = size / 2
	if got := p.room(chunk[:len(head)+10], len(chunk), kavach.Request); cap(got) >= whole {
		t.Errorf("room made %d bytes for a message over the limit of %d", cap(got), p.opts.MaxFrame)
	}
}

// TestLetGoOfLargeMessage: once a large message is framed and written,
// what is left of the buffer (a slice of the same array) is copied out,
// so the array can go; after small messages the buffer is kept.
func TestLetGoOfLargeMessage(t *testing.T) {
	buf := make([]byte, 4<<20)
	msg, rest := buf[:len(buf)-10], buf[len(buf)-10:]
	kept := letGo(rest, []message{{data: msg}})
	if len(kept) != len(rest) || cap(kept) >= len(buf) || &kept[:1][0] == &rest[:1][0] {
		t.Errorf("after a large message: %d bytes left, cap %d, same array %v; want the 10 bytes copied out", len(kept), cap(kept), &kept[:1][0] == &rest[:1][0])
	}
	small := buf[:100]
	if got := letGo(buf[100:200], []message{{data: small}}); &got[:1][0] != &buf[100] {
		t.Errorf("after a small message the buffer was copied")
	}
}
