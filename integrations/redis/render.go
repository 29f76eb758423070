package redis

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

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
