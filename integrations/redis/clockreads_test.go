package redis

import (
	"testing"
	"time"
)

func TestClockReads(t *testing.T) {
	in := Integration{}
	cmd := func(args ...string) []byte {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return AppendCommand(nil, b...)
	}
	id := "$15\r\n1796341967736-0\r\n"
	at := time.UnixMilli(1796341967736).UTC()
	for _, c := range []struct {
		req   []byte
		reply string
		want  time.Time // zero: the request shows no reading
		shows bool      // the request is one that can show a reading
	}{
		{cmd("XADD", "s", "*", "f", "v"), id, at, true},
		{cmd("xadd", "s", "NOMKSTREAM", "MAXLEN", "~", "10", "LIMIT", "5", "*", "f", "v"), id, at, true},
		{cmd("XADD", "s", "MINID", "=", "0-1", "*", "f", "v"), id, at, true},
		{cmd("XADD", "s", "MAXLEN", "10", "*", "f", "v"), id, at, true},
		// An id the client chose, or a threshold that looks like one: not the clock.
		{cmd("XADD", "s", "5-1", "f", "v"), "$3\r\n5-1\r\n", time.Time{}, false},
		{cmd("XADD", "s", "MAXLEN", "*", "5-*", "f", "v"), id, time.Time{}, false},
		{cmd("XADD", "s", "1796341967736-*", "f", "v"), id, time.Time{}, false},
		// What cannot be read is no reading.
		{cmd("XADD", "s", "*", "f", "v"), "$-1\r\n", time.Time{}, true},
		{cmd("XADD", "s", "*", "f", "v"), "-ERR wrong\r\n", time.Time{}, true},
		{cmd("XADD", "s", "*", "f", "v"), "$3\r\nabc\r\n", time.Time{}, true},
		{cmd("TIME"), "*2\r\n$10\r\n1796341967\r\n$6\r\n736250\r\n", time.Unix(1796341967, 736250000).UTC(), true},
		{cmd("TIME"), "*2\r\n$10\r\n1796341967\r\n$7\r\n1736250\r\n", time.Time{}, true},
		{cmd("TIME"), "*1\r\n$10\r\n1796341967\r\n", time.Time{}, true},
		{cmd("GET", "k"), "$15\r\n1796341967736-0\r\n", time.Time{}, false},
		{[]byte("XADD s * f v\r\n"), id, time.Time{}, false}, // inline: not read (clients send arrays)
		{[]byte("*1\r\n$4\r\nXA"), id, time.Time{}, false},
	} {
		read := in.ClockReads(c.req)
		if (read != nil) != c.shows {
			t.Errorf("%q: reads the clock = %v, want %v", c.req, read != nil, c.shows)
			continue
		}
		if read == nil {
			continue
		}
		got, ok := read([]byte(c.reply))
		if ok != !c.want.IsZero() || !got.Equal(c.want) {
			t.Errorf("%q answered %q: reading %v, %v; want %v", c.req, c.reply, got, ok, c.want)
		}
	}
}
