// Package redis is Kavach's integration for Redis and Valkey: the RESP2/RESP3
// codec, which frames the byte stream into whole messages (Split), parses a
// message into a Value that keeps its wire bytes (Parse), reads client
// requests as commands (ParseCommand), encodes messages strconv.Append-style,
// and renders them on one line the way redis-cli does.
//
// The codec covers every RESP2 and RESP3 type, attributes included, and the
// inline commands redis-server accepts ("PING\r\n"). Streamed strings and
// aggregates of unknown length ("$?", "*?") are not supported: they are
// reported as protocol errors. Input is bounded by MaxBulkLen, MaxElems,
// MaxDepth and MaxInlineLen.
package redis

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Limits on what Split and Parse accept; larger input is a ProtocolError.
const (
	MaxBulkLen   = 512 << 20 // bytes in a bulk string, bulk error, verbatim string or simple string
	MaxElems     = 1 << 24   // elements in an aggregate (entries, for maps and attributes)
	MaxDepth     = 1 << 13   // aggregates nested in one another, attributes included: more than a script can return (Lua stops near 8,000), less than JSON decoders take (Go: 10,000)
	MaxInlineLen = 64 << 10  // bytes in an inline command line, CRLF excluded
)

// ProtocolError reports malformed RESP input.
type ProtocolError struct {
	Offset int    // where in the input the problem is, in bytes
	Reason string // what is wrong, e.g. "invalid bulk string length"
	Bytes  []byte // a copy of the input from Offset: at most 64 bytes, up to the first LF
}

func (e *ProtocolError) Error() string {
	if len(e.Bytes) == 0 {
		return fmt.Sprintf("resp: %s at byte %d", e.Reason, e.Offset)
	}
	return fmt.Sprintf("resp: %s at byte %d: %.100q", e.Reason, e.Offset, e.Bytes)
}

// Kind is the type of a Value: its RESP type byte, or KindInline.
type Kind byte

// The kinds.
const (
	KindSimple    Kind = '+' // simple string
	KindError     Kind = '-' // simple error
	KindInt       Kind = ':' // integer
	KindBulk      Kind = '$' // bulk string
	KindArray     Kind = '*' // array
	KindNull      Kind = '_' // RESP3 null
	KindBool      Kind = '#' // boolean
	KindDouble    Kind = ',' // double
	KindBigNumber Kind = '(' // big number
	KindBulkError Kind = '!' // bulk error
	KindVerbatim  Kind = '=' // verbatim string
	KindMap       Kind = '%' // map
	KindSet       Kind = '~' // set
	KindPush      Kind = '>' // push
	KindInline    Kind = 'I' // inline command: a line of space-separated arguments

	kindAttr Kind = '|' // attribute; never a Value's Kind, see Value.Attrs
)

func (k Kind) String() string {
	switch k {
	case KindSimple:
		return "simple string"
	case KindError:
		return "error"
	case KindInt:
		return "integer"
	case KindBulk:
		return "bulk string"
	case KindArray:
		return "array"
	case KindNull:
		return "null"
	case KindBool:
		return "boolean"
	case KindDouble:
		return "double"
	case KindBigNumber:
		return "big number"
	case KindBulkError:
		return "bulk error"
	case KindVerbatim:
		return "verbatim string"
	case KindMap:
		return "map"
	case KindSet:
		return "set"
	case KindPush:
		return "push"
	case KindInline:
		return "inline command"
	case kindAttr:
		return "attribute"
	}
	return fmt.Sprintf("Kind(%q)", byte(k))
}

// isType reports whether c starts a RESP value; any other first byte starts
// an inline command.
func isType(c byte) bool {
	switch Kind(c) {
	case KindSimple, KindError, KindInt, KindBulk, KindArray, KindNull, KindBool, KindDouble,
		KindBigNumber, KindBulkError, KindVerbatim, KindMap, KindSet, KindPush, kindAttr:
		return true
	}
	return false
}

// Value is one parsed RESP value. Its byte slices alias the frame it was
// parsed from.
type Value struct {
	Kind Kind
	// Raw is the exact wire bytes of the value, its attribute included; for
	// the value Parse returns, the whole frame.
	Raw []byte
	// Str is the payload of a simple string, error, bulk string, bulk error,
	// verbatim string (without the "txt:" prefix), and the text of a double
	// or big number. It is nil for a null bulk string.
	Str    []byte
	Int    int64  // the integer, for KindInt
	Bool   bool   // the boolean, for KindBool
	Null   bool   // KindNull, a null bulk string ("$-1") or a null array ("*-1")
	Format string // the verbatim string's format, e.g. "txt"
	// Elems holds the elements of an array, set or push, the keys and
	// values of a map alternating, and the arguments of an inline command
	// (each a KindBulk whose Raw is the argument as written on the line).
	Elems []Value
	// Attrs holds the entries of the attribute sent before the value, keys
	// and values alternating; nil if there was none, empty for "|0".
	Attrs []Value
}

// errIncomplete is the scanner's internal "need more bytes".
var errIncomplete = errors.New("resp: incomplete frame")

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

// Parse parses frame, which must be exactly one whole frame as Split finds
// it. The Value it returns aliases frame. The error, a *ProtocolError, says
// where frame is malformed, incomplete, or followed by trailing bytes.
func Parse(frame []byte) (Value, error) {
	if n, ok := rdbTransfer(frame); ok && n == len(frame) {
		q := bytes.IndexByte(frame, '\n') + 1
		return Value{Kind: KindBulk, Raw: frame, Str: frame[q:]}, nil
	}
	s := scanner{data: frame, build: true}
	v, n, err := s.top()
	if err != nil {
		return Value{}, s.wrapIncomplete(err)
	}
	if n != len(frame) {
		return Value{}, s.fail(n, "trailing bytes after frame")
	}
	return v, nil
}

// scanner reads RESP from data. Without build it only validates, and so
// neither allocates nor keeps anything.
type scanner struct {
	data  []byte
	build bool
}

func (s *scanner) fail(off int, reason string) error {
	var b []byte
	if off < len(s.data) {
		b = s.data[off:min(len(s.data), off+64)]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		}
		b = bytes.Clone(b)
	}
	return &ProtocolError{Offset: off, Reason: reason, Bytes: b}
}

// wrapIncomplete turns errIncomplete into the error of a frame that ends
// too soon.
func (s *scanner) wrapIncomplete(err error) error {
	if err == errIncomplete {
		return &ProtocolError{Offset: len(s.data), Reason: "incomplete frame"}
	}
	return err
}

// top scans the frame at the start of data.
func (s *scanner) top() (Value, int, error) {
	switch {
	case len(s.data) == 0:
		return Value{}, 0, errIncomplete
	case isType(s.data[0]):
		return s.value(0, 0)
	case !s.build:
		n, err := s.inline(nil)
		return Value{}, n, err
	}
	v := Value{Kind: KindInline, Elems: []Value{}}
	n, err := s.inline(func(raw, arg []byte) {
		v.Elems = append(v.Elems, Value{Kind: KindBulk, Raw: raw, Str: arg})
	})
	if err != nil {
		return Value{}, 0, err
	}
	v.Raw = s.data[:n]
	return v, n, nil
}

// value scans the value at p, with its attribute, inside depth aggregates.
// It returns the offset just past it.
func (s *scanner) value(p, depth int) (Value, int, error) {
	start := p
	var attrs []Value
	if p < len(s.data) && Kind(s.data[p]) == kindAttr {
		var err error
		if attrs, _, p, err = s.aggregate(p, depth); err != nil {
			return Value{}, 0, err
		}
		if p < len(s.data) && Kind(s.data[p]) == kindAttr {
			return Value{}, 0, s.fail(p, "attribute followed by another attribute")
		}
	}
	if p >= len(s.data) {
		return Value{}, 0, errIncomplete
	}
	t := Kind(s.data[p])
	v := Value{Kind: t}
	var end int
	switch t {
	case KindSimple, KindError, KindInt, KindNull, KindBool, KindDouble, KindBigNumber:
		var err error
		if end, err = s.simple(p, t, &v); err != nil {
			return Value{}, 0, err
		}
	case KindBulk, KindBulkError, KindVerbatim:
		n, q, err := s.header(p)
		if err != nil {
			return Value{}, 0, err
		}
		if n < 0 {
			v.Null, end = true, q
			break
		}
		if end, err = s.payload(q, n); err != nil {
			return Value{}, 0, err
		}
		v.Str = s.data[q : q+n]
		if t == KindVerbatim {
			if n < 4 || v.Str[3] != ':' {
				return Value{}, 0, s.fail(q, "verbatim string without a format prefix")
			}
			if s.build {
				v.Format = string(v.Str[:3])
			}
			v.Str = v.Str[4:]
		}
	case KindArray, KindMap, KindSet, KindPush:
		var err error
		if v.Elems, v.Null, end, err = s.aggregate(p, depth); err != nil {
			return Value{}, 0, err
		}
	default:
		return Value{}, 0, s.fail(p, fmt.Sprintf("unknown type byte %q", byte(t)))
	}
	if !s.build {
		return Value{}, end, nil
	}
	v.Raw, v.Attrs = s.data[start:end], attrs
	return v, end, nil
}

// simple scans the one-line value of type t at p (a simple string, an
// error, an integer, a null, a boolean, a double or a big number) into
// v. It returns the offset just past it.
func (s *scanner) simple(p int, t Kind, v *Value) (int, error) {
	var max int
	var tooLong string // constant: concatenating would allocate
	switch t {
	case KindSimple:
		max, tooLong = MaxBulkLen, "simple string too long"
	case KindError:
		max, tooLong = MaxBulkLen, "error too long"
	case KindDouble:
		max, tooLong = MaxInlineLen, "double too long"
	case KindBigNumber:
		max, tooLong = MaxInlineLen, "big number too long"
	case KindInt:
		max, tooLong = 20, "invalid integer"
	case KindNull:
		max, tooLong = 1, "invalid null"
	case KindBool:
		max, tooLong = 1, "invalid boolean"
	}
	e, err := s.line(p+1, max)
	if err == errTooLong {
		err = s.fail(p+1, tooLong)
	}
	if err != nil {
		return 0, err
	}
	text, ok := s.data[p+1:e], true
	switch t {
	case KindInt:
		v.Int, ok = parseInt(text)
	case KindNull:
		v.Null, ok = true, len(text) == 0
	case KindBool:
		v.Bool = string(text) == "t"
		ok = v.Bool || string(text) == "f"
	case KindDouble:
		ok = validDouble(text)
	case KindBigNumber:
		ok = validBigNumber(text)
	}
	if !ok {
		return 0, s.fail(p+1, "invalid "+t.String())
	}
	if t != KindInt && t != KindNull && t != KindBool {
		v.Str = text
	}
	return e + 2, nil
}

// aggregate scans the array, map, set, push or attribute at p, inside
// depth aggregates.
func (s *scanner) aggregate(p, depth int) (elems []Value, null bool, end int, err error) {
	if depth >= MaxDepth {
		return nil, false, 0, s.fail(p, fmt.Sprintf("aggregates nested more than %d deep", MaxDepth))
	}
	n, q, err := s.header(p)
	if err != nil || n < 0 {
		return nil, n < 0, q, err
	}
	if t := Kind(s.data[p]); t == KindMap || t == kindAttr {
		n *= 2
	}
	if s.build {
		// Every value takes at least 3 bytes: never allocate for elements
		// that are declared but not there.
		elems = make([]Value, 0, min(n, (len(s.data)-q)/3))
	}
	for range n {
		v, e, err := s.value(q, depth+1)
		if err != nil {
			return nil, false, 0, err
		}
		if s.build {
			elems = append(elems, v)
		}
		q = e
	}
	return elems, false, q, nil
}

// header reads the length line of the string or aggregate at p. It returns
// the length, -1 for null (allowed for bulk strings and arrays only), and
// the offset just past the line.
func (s *scanner) header(p int) (n, next int, err error) {
	t := Kind(s.data[p])
	e, err := s.line(p+1, 20)
	if err == errTooLong {
		err = s.fail(p+1, "invalid "+t.String()+" length")
	}
	if err != nil {
		return 0, 0, err
	}
	text := s.data[p+1 : e]
	if len(text) == 1 && text[0] == '?' {
		return 0, 0, s.fail(p+1, "streamed "+t.String()+"s are not supported")
	}
	limit := MaxElems
	if t == KindBulk || t == KindBulkError || t == KindVerbatim {
		limit = MaxBulkLen
	}
	i, ok := parseInt(text)
	switch {
	case !ok || i < -1 || i == -1 && t != KindBulk && t != KindArray:
		return 0, 0, s.fail(p+1, "invalid "+t.String()+" length")
	case i > int64(limit):
		return 0, 0, s.fail(p+1, fmt.Sprintf("%s length over %d", t, limit))
	}
	return int(i), e + 2, nil
}

// payload checks the n bytes of a string at q and the CRLF after them, and
// returns the offset just past the CRLF.
func (s *scanner) payload(q, n int) (int, error) {
	e := q + n
	if e < len(s.data) && s.data[e] != '\r' || e+1 < len(s.data) && s.data[e+1] != '\n' {
		return 0, s.fail(e, "missing CRLF after string payload")
	}
	if e+2 > len(s.data) {
		return 0, errIncomplete
	}
	return e + 2, nil
}

// errTooLong is line's internal "no CRLF within the limit".
var errTooLong = errors.New("resp: line too long")

// line finds the CRLF ending the line whose text starts at p, and returns
// the offset of its CR. The text must not hold CR or LF; when more than max
// bytes come without a CR, line returns errTooLong.
func (s *scanner) line(p, max int) (int, error) {
	seg := s.data[p:min(len(s.data), p+max+1)]
	cr := bytes.IndexByte(seg, '\r')
	text := seg
	if cr >= 0 {
		text = seg[:cr]
	}
	if lf := bytes.IndexByte(text, '\n'); lf >= 0 {
		return 0, s.fail(p+lf, "LF without CR")
	}
	switch {
	case cr < 0 && len(seg) > max:
		return 0, errTooLong
	case cr < 0 || p+cr+1 == len(s.data):
		return 0, errIncomplete
	case s.data[p+cr+1] != '\n':
		return 0, s.fail(p+cr+1, "CR not followed by LF")
	}
	return p + cr, nil
}

// inline scans the inline command at the start of data, calling emit (if
// not nil) with each argument as written and as meant. It returns the
// length of the line, LF included.
func (s *scanner) inline(emit func(raw, arg []byte)) (int, error) {
	i := bytes.IndexByte(s.data[:min(len(s.data), MaxInlineLen+2)], '\n')
	if i < 0 {
		if len(s.data) > MaxInlineLen+1 {
			return 0, s.fail(0, "inline command longer than 64 KiB")
		}
		return 0, errIncomplete
	}
	line := s.data[:i]
	if i > 0 && line[i-1] == '\r' {
		line = line[:i-1]
	}
	if len(line) > MaxInlineLen {
		return 0, s.fail(0, "inline command longer than 64 KiB")
	}
	if err := s.splitArgs(line, emit); err != nil {
		return 0, err
	}
	return i + 1, nil
}

// splitArgs splits an inline command line (at the start of data) into
// arguments the way redis-server's sdssplitargs does: separated by
// whitespace; in double quotes, the escapes \xHH, \n, \r, \t, \b, \a and
// \<any byte>; in single quotes, \'. A closing quote must be followed by
// whitespace or the end of the line.
func (s *scanner) splitArgs(line []byte, emit func(raw, arg []byte)) error {
	for i := 0; ; {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return nil
		}
		start := i
		for i < len(line) && !isSpace(line[i]) && line[i] != '"' && line[i] != '\'' {
			i++
		}
		if i == len(line) || isSpace(line[i]) {
			if emit != nil {
				emit(line[start:i], line[start:i])
			}
			continue
		}
		// A quote: the argument differs from the line, and ends with the
		// closing quote.
		open, q := i, line[i]
		var arg []byte
		if emit != nil {
			arg = append(make([]byte, 0, 16), line[start:i]...)
		}
		for i++; ; {
			if i == len(line) {
				return s.fail(open, "unbalanced quotes in inline command")
			}
			c, w := line[i], 1
			if c == q {
				i++
				break
			}
			switch {
			case c != '\\':
			case q == '\'':
				if i+1 < len(line) && line[i+1] == '\'' {
					c, w = '\'', 2
				}
			case i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
				c, w = unhex(line[i+2])<<4|unhex(line[i+3]), 4
			case i+1 < len(line):
				c, w = line[i+1], 2
				switch c {
				case 'n':
					c = '\n'
				case 'r':
					c = '\r'
				case 't':
					c = '\t'
				case 'b':
					c = '\b'
				case 'a':
					c = '\a'
				}
			}
			if emit != nil {
				arg = append(arg, c)
			}
			i += w
		}
		if i < len(line) && !isSpace(line[i]) {
			return s.fail(i, "closing quote not followed by a space in inline command")
		}
		if emit != nil {
			emit(line[start:i], arg)
		}
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// parseInt parses a canonical decimal int64, as redis-server's string2ll
// does: no sign but '-', no leading zeros, no "-0".
func parseInt(b []byte) (int64, bool) {
	d := b
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 19 || d[0] == '0' && len(b) > 1 {
		return 0, false
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if len(d) < len(b) {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// digits returns the number of leading ASCII digits in b.
func digits(b []byte) int {
	i := 0
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// validDouble reports whether b is a RESP3 double:
// [+-]digits[.digits][(e|E)[+-]digits], inf, -inf or nan.
func validDouble(b []byte) bool {
	switch string(b) {
	case "inf", "+inf", "-inf", "nan", "-nan":
		return true
	}
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b = b[1:]
	}
	n := digits(b)
	if n == 0 {
		return false
	}
	b = b[n:]
	if len(b) > 0 && b[0] == '.' {
		if n = digits(b[1:]); n == 0 {
			return false
		}
		b = b[1+n:]
	}
	if len(b) > 0 && (b[0] == 'e' || b[0] == 'E') {
		b = b[1:]
		if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
			b = b[1:]
		}
		if n = digits(b); n == 0 {
			return false
		}
		b = b[n:]
	}
	return len(b) == 0
}

// validBigNumber reports whether b is a big number as servers send one:
// any text on the line. The protocol says [+-]digits, but Redis 7.0 sends
// what a script returns as a big number unchecked, CR and LF replaced by
// spaces ("(123  123"), and a codec that refused it would leave the rest
// of the connection unframed.
func validBigNumber(b []byte) bool {
	return true
}

// Command is a client request.
type Command struct {
	Name   string   // the first argument, upper-cased (ASCII); "" for an empty command
	Args   [][]byte // all the arguments, the name first, as sent
	Inline bool     // sent as an inline command rather than an array
	Raw    []byte   // the frame
}

// ParseCommand parses a request frame, exactly one whole frame as Split
// finds it: an array of bulk strings, or an inline command. An empty array
// or an empty inline line is a Command with no arguments, which
// redis-server ignores. Args alias frame, except inline arguments that
// quotes or escapes changed.
func ParseCommand(frame []byte) (Command, error) {
	c := Command{Raw: frame}
	if err := c.parse(frame); err != nil {
		return Command{}, fmt.Errorf("redis command: %w", err)
	}
	if len(c.Args) > 0 {
		name := append([]byte(nil), c.Args[0]...)
		for i, b := range name {
			if 'a' <= b && b <= 'z' {
				name[i] = b - 'a' + 'A'
			}
		}
		c.Name = string(name)
	}
	return c, nil
}

func (c *Command) parse(frame []byte) error {
	s := scanner{data: frame}
	var end int
	var err error
	switch {
	case len(frame) == 0:
		err = errIncomplete
	case Kind(frame[0]) == KindArray:
		end, err = s.commandArray(&c.Args)
	case isType(frame[0]):
		return s.fail(0, fmt.Sprintf("a %s is not a command", Kind(frame[0])))
	default:
		c.Inline = true
		end, err = s.inline(func(_, arg []byte) { c.Args = append(c.Args, arg) })
	}
	if err != nil {
		return s.wrapIncomplete(err)
	}
	if end != len(frame) {
		return s.fail(end, "trailing bytes after frame")
	}
	return nil
}

// commandArray scans an array of bulk strings at the start of data into
// args, and returns its length.
func (s *scanner) commandArray(args *[][]byte) (int, error) {
	n, q, err := s.header(0)
	switch {
	case err != nil:
		return 0, err
	case n < 0:
		return 0, s.fail(1, "a null array is not a command")
	}
	*args = make([][]byte, 0, min(n, (len(s.data)-q)/6)) // "$0\r\n\r\n" is the shortest argument
	for range n {
		if q >= len(s.data) {
			return 0, errIncomplete
		}
		if Kind(s.data[q]) != KindBulk {
			return 0, s.fail(q, fmt.Sprintf("command argument is a %s, not a bulk string", Kind(s.data[q])))
		}
		m, r, err := s.header(q)
		if err == nil && m < 0 {
			err = s.fail(q+1, "command argument is a null bulk string")
		}
		if err != nil {
			return 0, err
		}
		if q, err = s.payload(r, m); err != nil {
			return 0, err
		}
		*args = append(*args, s.data[r:r+m])
	}
	return q, nil
}

// AppendCommand appends a command, as clients send it: an array of bulk
// strings.
func AppendCommand(dst []byte, args ...[]byte) []byte {
	dst = AppendArrayHeader(dst, len(args))
	for _, a := range args {
		dst = AppendBulk(dst, a)
	}
	return dst
}

// AppendBulk appends b as a bulk string; nil is the empty string (see
// AppendNull).
func AppendBulk(dst, b []byte) []byte {
	dst = appendHeader(dst, KindBulk, len(b))
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendSimple appends s as a simple string. CR and LF, which a simple
// string cannot hold, become spaces.
func AppendSimple(dst []byte, s string) []byte {
	return appendLine(dst, KindSimple, s)
}

// AppendError appends msg as a simple error. By convention msg starts with
// an error code: "ERR syntax error". CR and LF become spaces.
func AppendError(dst []byte, msg string) []byte {
	return appendLine(dst, KindError, msg)
}

// AppendInt appends n as an integer.
func AppendInt(dst []byte, n int64) []byte {
	dst = strconv.AppendInt(append(dst, byte(KindInt)), n, 10)
	return append(dst, '\r', '\n')
}

// AppendArrayHeader appends the header of an array of n elements, which
// the caller appends next; n < 0 appends the RESP2 null array "*-1".
func AppendArrayHeader(dst []byte, n int) []byte {
	return appendHeader(dst, KindArray, max(n, -1))
}

// AppendNull appends the RESP2 null bulk string "$-1".
func AppendNull(dst []byte) []byte {
	return append(dst, "$-1\r\n"...)
}

func appendHeader(dst []byte, k Kind, n int) []byte {
	dst = strconv.AppendInt(append(dst, byte(k)), int64(n), 10)
	return append(dst, '\r', '\n')
}

func appendLine[T string | []byte](dst []byte, k Kind, s T) []byte {
	dst = append(dst, byte(k))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return append(dst, '\r', '\n')
}

// Append appends v in canonical RESP: shortest lengths, CRLF line ends, the
// attribute (if any) in front. A Value that Parse made from canonical bytes
// is appended as exactly those bytes. An inline command is appended as a
// line of its arguments, in double quotes where needed (the first always
// when it starts with a RESP type byte), with CRLF; nested in another
// value, or longer than MaxInlineLen, as an array of bulk strings instead.
// The text of a double or big number is appended as it is in Str; the
// Null field matters only for bulk strings and arrays; a map or attribute
// with an odd number of elements is completed with a null; a Value of no
// known Kind, such as the zero Value, is appended as the RESP3 null "_".
func (v Value) Append(dst []byte) []byte {
	return v.appendTo(dst, true)
}

func (v Value) appendTo(dst []byte, top bool) []byte {
	if v.Kind == KindInline {
		if top {
			return appendInline(dst, v.Elems)
		}
		dst = appendHeader(dst, KindArray, len(v.Elems))
		for _, a := range v.Elems {
			dst = AppendBulk(dst, a.Str)
		}
		return dst
	}
	if v.Attrs != nil {
		dst = appendPairs(dst, kindAttr, v.Attrs)
	}
	switch v.Kind {
	case KindSimple, KindError, KindDouble, KindBigNumber:
		return appendLine(dst, v.Kind, v.Str)
	case KindInt:
		return AppendInt(dst, v.Int)
	case KindBool:
		if v.Bool {
			return append(dst, "#t\r\n"...)
		}
		return append(dst, "#f\r\n"...)
	case KindBulk, KindBulkError:
		if v.Null && v.Kind == KindBulk {
			return AppendNull(dst)
		}
		dst = appendHeader(dst, v.Kind, len(v.Str))
		return append(append(dst, v.Str...), '\r', '\n')
	case KindVerbatim:
		f := v.Format
		if len(f) != 3 {
			f = "txt"
		}
		dst = appendHeader(dst, v.Kind, 4+len(v.Str))
		dst = append(append(append(dst, f...), ':'), v.Str...)
		return append(dst, '\r', '\n')
	case KindArray, KindSet, KindPush:
		if v.Null && v.Kind == KindArray {
			return AppendArrayHeader(dst, -1)
		}
		dst = appendHeader(dst, v.Kind, len(v.Elems))
		for _, e := range v.Elems {
			dst = e.appendTo(dst, false)
		}
		return dst
	case KindMap:
		return appendPairs(dst, v.Kind, v.Elems)
	}
	return append(dst, "_\r\n"...)
}

// appendPairs appends a map or attribute of alternating keys and values.
func appendPairs(dst []byte, k Kind, kv []Value) []byte {
	dst = appendHeader(dst, k, (len(kv)+1)/2)
	for _, e := range kv {
		dst = e.appendTo(dst, false)
	}
	if len(kv)%2 == 1 {
		dst = append(dst, "_\r\n"...)
	}
	return dst
}

// appendInline appends an inline command line of args.
func appendInline(dst []byte, args []Value) []byte {
	start := len(dst)
	for i, a := range args {
		if i > 0 {
			dst = append(dst, ' ')
		}
		if plainArg(a.Str, i == 0) {
			dst = append(dst, a.Str...)
		} else {
			dst = appendQuoted(dst, a.Str)
		}
	}
	if len(dst)-start > MaxInlineLen {
		return Value{Kind: KindInline, Elems: args}.appendTo(dst[:start], false)
	}
	return append(dst, '\r', '\n')
}

// plainArg reports whether an inline argument can be written without
// quotes: not empty, no whitespace, quotes or control bytes, and, first,
// not starting with a RESP type byte.
func plainArg(b []byte, first bool) bool {
	if len(b) == 0 || first && isType(b[0]) {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c == '"' || c == '\'' || c == 0x7f {
			return false
		}
	}
	return true
}

// appendQuoted appends b in double quotes, escaped as redis-server's
// sdscatrepr does (and sdssplitargs reads back).
func appendQuoted(dst, b []byte) []byte {
	dst = append(dst, '"')
	for _, c := range b {
		switch c {
		case '\\', '"':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\a':
			dst = append(dst, '\\', 'a')
		case '\b':
			dst = append(dst, '\\', 'b')
		default:
			if ' ' <= c && c < 0x7f {
				dst = append(dst, c)
			} else {
				dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
			}
		}
	}
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// renderMax is about the longest String rendering, in bytes.
const renderMax = 200

// String renders v on one line the way redis-cli does, cut to about 200
// bytes with "…": OK, (error) ERR …, (integer) 3, "bulk", (nil),
// 1) "a" 2) "b", 1# "key" => "value" for maps, 1~ "a" for sets; a nested
// aggregate is in brackets. Attributes are left out.
func (v Value) String() string {
	return finish(v.render(nil, false))
}

func (v Value) render(b []byte, nested bool) []byte {
	switch v.Kind {
	case KindSimple:
		return appendText(b, v.Str)
	case KindError, KindBulkError:
		return appendText(append(b, "(error) "...), v.Str)
	case KindInt:
		return strconv.AppendInt(append(b, "(integer) "...), v.Int, 10)
	case KindDouble:
		return appendText(append(b, "(double) "...), v.Str)
	case KindBigNumber:
		return appendText(append(b, "(big number) "...), v.Str)
	case KindBool:
		return append(strconv.AppendBool(append(b, '('), v.Bool), ')')
	case KindNull:
		return append(b, "(nil)"...)
	case KindBulk, KindVerbatim:
		if v.Null {
			return append(b, "(nil)"...)
		}
		return appendQuoted(b, clip(v.Str))
	case KindInline:
		if len(v.Elems) == 0 {
			return append(b, "(empty inline command)"...)
		}
		args := make([][]byte, len(v.Elems))
		for i, e := range v.Elems {
			args[i] = e.Str
		}
		return renderArgs(b, args[0], args[1:])
	case KindArray, KindSet, KindPush, KindMap:
	default:
		return fmt.Appendf(b, "(%s)", v.Kind)
	}
	if v.Null {
		return append(b, "(nil)"...)
	}
	if len(v.Elems) == 0 {
		return append(b, "(empty "+v.Kind.String()+")"...)
	}
	if nested {
		b = append(b, '[')
	}
	step, mark := 1, ") "
	switch v.Kind {
	case KindMap:
		step, mark = 2, "# "
	case KindSet:
		mark = "~ "
	}
	for i := 0; i < len(v.Elems) && len(b) <= renderMax; i += step {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(strconv.AppendInt(b, int64(i/step+1), 10), mark...)
		b = v.Elems[i].render(b, true)
		if step == 2 {
			b = append(b, " => "...)
			if i+1 < len(v.Elems) {
				b = v.Elems[i+1].render(b, true)
			}
		}
	}
	if nested {
		b = append(b, ']')
	}
	return b
}

// String renders c on one line for a person, the name bare and the other
// arguments quoted, cut to about 200 bytes with "…": SET "k" "v".
func (c Command) String() string {
	if len(c.Args) == 0 {
		return ""
	}
	name := []byte(c.Name)
	if len(name) == 0 {
		name = c.Args[0]
	}
	return finish(renderArgs(nil, name, c.Args[1:]))
}

// renderArgs renders a command name, bare if it is plain, and its quoted
// arguments.
func renderArgs(b, name []byte, args [][]byte) []byte {
	if plainArg(name, false) {
		b = append(b, clip(name)...)
	} else {
		b = appendQuoted(b, clip(name))
	}
	for _, a := range args {
		if len(b) > renderMax {
			break
		}
		b = appendQuoted(append(b, ' '), clip(a))
	}
	return b
}

// appendText appends text for a person: control bytes as \xHH.
func appendText(b, text []byte) []byte {
	for _, c := range clip(text) {
		if c < ' ' || c == 0x7f {
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
		} else {
			b = append(b, c)
		}
	}
	return b
}

// clip cuts b to what a rendering can show.
func clip(b []byte) []byte {
	return b[:min(len(b), renderMax+1)]
}

// finish cuts a rendering to renderMax bytes, at a rune boundary, marking
// the cut with "…".
func finish(b []byte) string {
	if len(b) <= renderMax {
		return string(b)
	}
	cut := renderMax
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}
