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
//
// The codec's files: resp.go (the types), split.go (framing), parse.go
// (values), command.go (requests), encode.go (the Append functions) and
// render.go (one-line renderings).
package redis

import "fmt"

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
