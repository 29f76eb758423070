package redis

import (
	"bytes"
	"errors"
	"fmt"
)

// errIncomplete is the scanner's internal "need more bytes".
var errIncomplete = errors.New("resp: incomplete frame")

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
