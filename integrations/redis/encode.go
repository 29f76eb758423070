package redis

import "strconv"

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
