package redis

import "bytes"

// Split finds the first whole frame in data. It returns n > 0 when data[:n]
// is exactly one frame; n == 0 and a nil error when data is a proper prefix
// of a frame and more bytes are needed; or a *ProtocolError saying where
// data is malformed, whatever follows.
//
// A frame is one RESP value, with the attribute before it if any, or an
// inline command: a line that does not start with a RESP type byte, ended
// by LF or CRLF. Split does not allocate unless it reports an error, and
// its work is linear in the bytes it looks at.
func Split(data []byte) (n int, err error) {
	switch n, st := fastSplit(data); st {
	case fastDone:
		return n, nil
	case fastMore:
		if n, ok := rdbTransfer(data); ok {
			return n, nil // the replication stream is yet to come
		}
		return 0, nil
	}
	if n, ok := rdbTransfer(data); ok {
		return n, nil
	}
	s := scanner{data: data}
	if _, n, err = s.top(); err != nil {
		if err == errIncomplete {
			return 0, nil
		}
		return 0, err
	}
	return n, nil
}

// rdbTransfer frames the data file a server sends a replica that asked
// for it (SYNC, PSYNC): "$<len>\r\n" and the file, with no CRLF after it,
// the replication stream coming next. It reports the frame's length when
// data starts with such a transfer and holds all of it: a bulk string
// whose payload starts with the file's magic "REDIS" and holds a whole
// file (its end-of-file opcode 0xFF before the 8-byte checksum), not
// followed by a CRLF. A bulk string of the same bytes followed by its
// CRLF is a bulk string, and its CRLF, once come, is part of it.
func rdbTransfer(data []byte) (int, bool) {
	if len(data) == 0 || data[0] != '$' {
		return 0, false
	}
	n, q, st := fastHeader(data, 0, MaxBulkLen)
	end := q + n
	if st != fastDone || n < len(rdbMagic)+9 || len(data) < end || !bytes.HasPrefix(data[q:], []byte(rdbMagic)) || data[end-9] != 0xFF {
		return 0, false
	}
	if len(data) > end && data[end] == '\r' {
		return 0, false // a bulk string: its CRLF
	}
	return end, true
}

// rdbMagic starts every Redis and Valkey data file.
const rdbMagic = "REDIS"

// What fastSplit found.
const (
	fastUnknown = iota // not a shape it frames: ask the scanner
	fastDone           // a whole frame of n bytes
	fastMore           // the start of a frame of its shapes, cut short: more bytes are needed
)

// fastSplit frames, without the general scanner, the shapes the recording
// proxy and the replay see most: bulk strings, simple strings of printable
// ASCII, plain integers, and arrays of those nested in one another — every
// client command, and large replies such as COMMAND DOCS, which a replay
// frames again each time more of it arrives. It answers fastDone (a whole
// frame of n bytes), fastMore (a frame of those shapes cut short: the
// scanner would ask for more bytes too), or fastUnknown for anything else —
// other types, a header that is not plainly canonical — and Split then runs
// the scanner. Wherever both answer, they agree (FuzzFastSplit checks it).
func fastSplit(data []byte) (n, st int) {
	return fastValue(data, 0, 0)
}

// fastValue frames the value at p for fastSplit: a bulk string, a simple
// string of printable ASCII, a plain integer (at most 18 digits, no
// leading zero), or an array of those, nested at most MaxDepth deep.
func fastValue(data []byte, p, depth int) (end, st int) {
	if p >= len(data) {
		return 0, fastMore
	}
	switch data[p] {
	case '+':
		for i := p + 1; i < len(data); i++ {
			switch c := data[i]; {
			case c == '\r':
				if i+1 == len(data) {
					return 0, fastMore
				}
				if data[i+1] == '\n' {
					return i + 2, fastDone
				}
				return 0, fastUnknown
			case c < 0x20 || c > 0x7e:
				return 0, fastUnknown
			}
		}
		return 0, fastMore
	case '$':
		return fastBulk(data, p)
	case ':':
		i := p + 1
		if i < len(data) && data[i] == '-' {
			i++
		}
		start := i
		for ; i < len(data) && data[i] >= '0' && data[i] <= '9'; i++ {
		}
		digits := i - start
		switch {
		case digits > 18 || digits > 1 && data[start] == '0' || digits == 1 && data[start] == '0' && start > p+1:
			return 0, fastUnknown
		case i == len(data) || i+1 == len(data) && data[i] == '\r' && digits > 0:
			return 0, fastMore
		case digits == 0 || data[i] != '\r' || data[i+1] != '\n':
			return 0, fastUnknown
		}
		return i + 2, fastDone
	case '*':
		if depth >= MaxDepth {
			return 0, fastUnknown
		}
		count, q, st := fastHeader(data, p, MaxElems)
		if st != fastDone {
			return 0, st
		}
		for ; count > 0; count-- {
			if q, st = fastValue(data, q, depth+1); st != fastDone {
				return 0, st
			}
		}
		return q, fastDone
	}
	return 0, fastUnknown
}

// fastHeader reads "T<digits>\r\n" at p, the digits canonical ("0" or no
// leading zero) and at most max; it returns the number and where the
// header ends, or fastMore when data ends inside such a header.
func fastHeader(data []byte, p, max int) (n, end, st int) {
	i := p + 1
	start := i
	for ; i < len(data) && data[i] >= '0' && data[i] <= '9'; i++ {
		n = n*10 + int(data[i]-'0')
		if n > max {
			return 0, 0, fastUnknown
		}
	}
	if i-start > 1 && data[start] == '0' {
		return 0, 0, fastUnknown
	}
	if i == len(data) || i+1 == len(data) && data[i] == '\r' && i > start {
		return 0, 0, fastMore
	}
	if i == start || data[i] != '\r' || data[i+1] != '\n' {
		return 0, 0, fastUnknown
	}
	return n, i + 2, fastDone
}

// fastBulk reads a whole "$<len>\r\n<payload>\r\n" at p and returns where
// it ends, or fastMore when data ends inside it.
func fastBulk(data []byte, p int) (end, st int) {
	n, q, st := fastHeader(data, p, MaxBulkLen)
	if st != fastDone {
		return 0, st
	}
	switch {
	case q+n < len(data) && data[q+n] != '\r', q+n+1 < len(data) && data[q+n+1] != '\n':
		return 0, fastUnknown
	case q+n+2 > len(data):
		return 0, fastMore
	}
	return q + n + 2, fastDone
}
