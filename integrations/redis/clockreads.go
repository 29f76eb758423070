package redis

import (
	"bytes"
	"strconv"
	"time"
)

// ClockReads is kavach.Abilities.ClockReads for Redis: an XADD whose id
// is "*" answers the id the server made, whose first part is the
// server's clock in milliseconds as it ran the command; TIME answers the
// clock in seconds and microseconds.
func (Integration) ClockReads(request []byte) func(reply []byte) (time.Time, bool) {
	name, ok := peekName(request)
	switch {
	case ok && bytes.EqualFold(name, []byte("TIME")):
		return timeReply
	case !ok || !bytes.EqualFold(name, []byte("XADD")):
		return nil
	}
	cmd, err := ParseCommand(request)
	if err != nil || len(cmd.Args) < 3 {
		return nil
	}
	if id := xaddID(cmd.Args); id == nil || string(id) != "*" {
		return nil
	}
	return streamIDTime
}

// xaddID is the id argument of XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~]
// threshold [LIMIT count]] id field value ..., or nil.
func xaddID(args [][]byte) []byte {
	i := 2
	for i < len(args) {
		switch a := args[i]; {
		case bytes.EqualFold(a, []byte("NOMKSTREAM")):
			i++
		case bytes.EqualFold(a, []byte("MAXLEN")) || bytes.EqualFold(a, []byte("MINID")):
			i++
			if i < len(args) && (string(args[i]) == "=" || string(args[i]) == "~") {
				i++
			}
			i++ // the threshold
		case bytes.EqualFold(a, []byte("LIMIT")):
			i += 2
		default:
			return a
		}
	}
	return nil
}

// streamIDTime reads the milliseconds of a stream id reply "ms-seq".
func streamIDTime(reply []byte) (time.Time, bool) {
	v, err := Parse(reply)
	if err != nil || v.Kind != KindBulk || v.Null {
		return time.Time{}, false
	}
	ms, _, ok := bytes.Cut(v.Str, []byte("-"))
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(string(ms), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(n).UTC(), true
}

// timeReply reads TIME's reply: seconds and microseconds, as two bulk
// strings.
func timeReply(reply []byte) (time.Time, bool) {
	v, err := Parse(reply)
	if err != nil || v.Kind != KindArray || len(v.Elems) != 2 {
		return time.Time{}, false
	}
	sec, err1 := strconv.ParseInt(string(v.Elems[0].Str), 10, 64)
	usec, err2 := strconv.ParseInt(string(v.Elems[1].Str), 10, 64)
	if err1 != nil || err2 != nil || sec <= 0 || usec < 0 || usec >= 1e6 {
		return time.Time{}, false
	}
	return time.Unix(sec, usec*1000).UTC(), true
}
