package redis

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// nest returns depth arrays nested in one another around a leaf.
func nest(depth int, leaf string) string {
	return strings.Repeat("*1\r\n", depth) + leaf
}

// validFrames are whole frames of every kind. Canonical ones are what
// Value.Append writes back; str is the String rendering.
var validFrames = []struct {
	name      string
	frame     string
	canonical bool
	str       string
}{
	{"simple", "+OK\r\n", true, "OK"},
	{"simple empty", "+\r\n", true, ""},
	{"simple utf8", "+héllo wörld\r\n", true, "héllo wörld"},
	{"error", "-ERR unknown command 'FOO'\r\n", true, "(error) ERR unknown command 'FOO'"},
	{"int", ":1000\r\n", true, "(integer) 1000"},
	{"int zero", ":0\r\n", true, "(integer) 0"},
	{"int negative", ":-42\r\n", true, "(integer) -42"},
	{"int max", ":9223372036854775807\r\n", true, "(integer) 9223372036854775807"},
	{"int min", ":-9223372036854775808\r\n", true, "(integer) -9223372036854775808"},
	{"bulk", "$5\r\nhello\r\n", true, `"hello"`},
	{"bulk empty", "$0\r\n\r\n", true, `""`},
	{"bulk binary", "$6\r\na\r\nb\x00\xff\r\n", true, `"a\r\nb\x00\xff"`},
	{"bulk null", "$-1\r\n", true, "(nil)"},
	{"array", "*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n", true, `1) "foo" 2) "bar"`},
	{"array empty", "*0\r\n", true, "(empty array)"},
	{"array null", "*-1\r\n", true, "(nil)"},
	{"array mixed", "*3\r\n:1\r\n+two\r\n$-1\r\n", true, `1) (integer) 1 2) two 3) (nil)`},
	{"array nested", "*2\r\n*2\r\n:1\r\n:2\r\n$1\r\nx\r\n", true, `1) [1) (integer) 1 2) (integer) 2] 2) "x"`},
	{"array deep", nest(100, ":1\r\n"), true, strings.Repeat("1) [", 99)[:200] + "…"},
	{"null", "_\r\n", true, "(nil)"},
	{"true", "#t\r\n", true, "(true)"},
	{"false", "#f\r\n", true, "(false)"},
	{"double", ",1.23\r\n", true, "(double) 1.23"},
	{"double integral", ",10\r\n", true, "(double) 10"},
	{"double signed exponent", ",-1.5e-10\r\n", true, "(double) -1.5e-10"},
	{"double plus exponent", ",+2E+300\r\n", true, "(double) +2E+300"},
	{"double inf", ",inf\r\n", true, "(double) inf"},
	{"double -inf", ",-inf\r\n", true, "(double) -inf"},
	{"double nan", ",nan\r\n", true, "(double) nan"},
	{"big number", "(3492890328409238509324850943850943825024385\r\n", true, "(big number) 3492890328409238509324850943850943825024385"},
	{"big number negative", "(-1\r\n", true, "(big number) -1"},
	{"bulk error", "!21\r\nSYNTAX invalid syntax\r\n", true, "(error) SYNTAX invalid syntax"},
	{"verbatim", "=15\r\ntxt:Some string\r\n", true, `"Some string"`},
	{"verbatim empty", "=4\r\nmkd:\r\n", true, `""`},
	{"map", "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", true, "1# first => (integer) 1 2# second => (integer) 2"},
	{"map empty", "%0\r\n", true, "(empty map)"},
	{"set", "~3\r\n+a\r\n:1\r\n#f\r\n", true, "1~ a 2~ (integer) 1 3~ (false)"},
	{"push", ">3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$5\r\nhello\r\n", true, `1) "message" 2) "chan" 3) "hello"`},
	{"attribute", "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n", true,
		"1) (integer) 2039123 2) (integer) 9543892"},
	{"attribute nested", "*2\r\n|1\r\n+ttl\r\n:3600\r\n+v\r\n:2\r\n", true, "1) v 2) (integer) 2"},
	{"attribute empty", "|0\r\n_\r\n", true, "(nil)"},
	{"inline", "PING\r\n", true, "PING"},
	{"inline args", "SET a b\r\n", true, `SET "a" "b"`},
	{"inline LF", "SET a b\n", false, `SET "a" "b"`},
	{"inline empty", "\r\n", true, "(empty inline command)"},
	{"inline empty LF", "\n", false, "(empty inline command)"},
	{"inline blanks", "  GET\t k  \r\n", false, `GET "k"`},
	{"inline quoted", "SET k \"a b\\n\"\r\n", true, `SET "k" "a b\n"`},
	{"inline escaped", "SET k \"a b\\x41\\n\"\r\n", false, `SET "k" "a bA\n"`},
	{"inline single quoted", "SET k 'it\\'s'\r\n", false, `SET "k" "it's"`},
	{"inline empty arg", "SET k \"\"\r\n", true, `SET "k" ""`},
	{"inline quote mid-token", "SET k a\"b c\"\r\n", false, `SET "k" "ab c"`},
	{"inline lower", "get k\r\n", true, `get "k"`},
}

func TestSplitValid(t *testing.T) {
	const next = "+NEXT\r\n"
	for _, tt := range validFrames {
		t.Run(tt.name, func(t *testing.T) {
			f := []byte(tt.frame)
			if n, err := Split(f); n != len(f) || err != nil {
				t.Fatalf("Split(%q) = %d, %v; want %d, nil", f, n, err, len(f))
			}
			if n, err := Split(append(f[:len(f):len(f)], next...)); n != len(f) || err != nil {
				t.Errorf("Split(frame+next) = %d, %v; want %d, nil", n, err, len(f))
			}
			for i := range len(f) {
				if n, err := Split(f[:i]); n != 0 || err != nil {
					t.Errorf("Split(%q) = %d, %v; want 0, nil (need more)", f[:i], n, err)
				}
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	for _, tt := range validFrames {
		t.Run(tt.name, func(t *testing.T) {
			f := []byte(tt.frame)
			v, err := Parse(f)
			if err != nil {
				t.Fatalf("Parse(%q): %v", f, err)
			}
			if !bytes.Equal(v.Raw, f) {
				t.Errorf("Raw = %q; want %q", v.Raw, f)
			}
			if got := v.String(); got != tt.str {
				t.Errorf("String() = %q; want %q", got, tt.str)
			}
			enc := v.Append(nil)
			if tt.canonical && !bytes.Equal(enc, f) {
				t.Errorf("Append = %q; want %q", enc, f)
			}
			if n, err := Split(enc); n != len(enc) || err != nil {
				t.Errorf("Split(Append = %q) = %d, %v", enc, n, err)
			}
			for i := range len(f) {
				if _, err := Parse(f[:i]); err == nil {
					t.Errorf("Parse(%q) succeeded on a prefix", f[:i])
				}
			}
			if _, err := Parse(append(f[:len(f):len(f)], '+')); err == nil {
				t.Errorf("Parse succeeded with a trailing byte")
			}
		})
	}
}

// TestWhatServersSend: replies Redis 7.0 sends that the protocol's letter
// would refuse, each framed and parsed whole, with what follows it on the
// connection framed after it: a script's recursive table (nested as deep
// as Lua's stack lets the conversion go, an error at the bottom), a big
// number a script returned with CR LF in it (sent with spaces), and the
// data file a replica asked for with SYNC (no CRLF after it).
func TestWhatServersSend(t *testing.T) {
	rdb := "REDIS0010\xfa\x09redis-ver\x067.0.15\xff" + "\x01\x02\x03\x04\x05\x06\x07\x08"
	for _, tc := range []struct {
		name, frame, str string
	}{
		{"recursive table", nest(7995, "-ERR reached lua stack limit\r\n"), strings.Repeat("1) [", 50)[:200] + "…"},
		{"deepest", nest(MaxDepth, ":1\r\n"), strings.Repeat("1) [", 50)[:200] + "…"},
		{"big number with spaces", "(123  123\r\n", "(big number) 123  123"},
		{"big number empty", "(\r\n", "(big number) "},
		{"data file", fmt.Sprintf("$%d\r\n%s", len(rdb), rdb), fmt.Sprintf("%q", rdb)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n, err := Split([]byte(tc.frame)); n != len(tc.frame) || err != nil {
				t.Fatalf("Split of the frame alone = %d, %v; want %d", n, err, len(tc.frame))
			}
			next := "*1\r\n$4\r\nPING\r\n"
			data := []byte(tc.frame + next)
			n, err := Split(data)
			if err != nil || n != len(tc.frame) {
				t.Fatalf("Split = %d, %v; want %d", n, err, len(tc.frame))
			}
			v, err := Parse(data[:n])
			if err != nil {
				t.Fatal(err)
			}
			if got := v.String(); got != tc.str {
				t.Errorf("String() = %.300q; want %.300q", got, tc.str)
			}
			if m, err := Split(data[n:]); m != len(next) || err != nil {
				t.Errorf("what follows: Split = %d, %v", m, err)
			}
			for _, i := range []int{1, n / 2, n - 1} {
				if m, err := Split(data[:i]); m != 0 || err != nil {
					t.Errorf("Split of the first %d bytes = %d, %v; want more needed", i, m, err)
				}
			}
		})
	}
	// The same bytes as a bulk string, its CRLF come: a bulk string.
	bulk := fmt.Sprintf("$%d\r\n%s\r\n", len(rdb), rdb)
	if n, err := Split([]byte(bulk + "+OK\r\n")); n != len(bulk) || err != nil {
		t.Errorf("a bulk string holding a data file: Split = %d, %v; want %d", n, err, len(bulk))
	}
	if n, err := Split([]byte(bulk[:len(bulk)-1])); n != 0 || err != nil {
		t.Errorf("a bulk string holding a data file, its LF to come: Split = %d, %v; want more needed", n, err)
	}
}

func TestParseFields(t *testing.T) {
	for _, tt := range []struct {
		frame string
		want  Value
	}{
		{"+OK\r\n", Value{Kind: KindSimple, Str: []byte("OK")}},
		{":-7\r\n", Value{Kind: KindInt, Int: -7}},
		{"$-1\r\n", Value{Kind: KindBulk, Null: true}},
		{"_\r\n", Value{Kind: KindNull, Null: true}},
		{"*-1\r\n", Value{Kind: KindArray, Null: true}},
		{"*0\r\n", Value{Kind: KindArray, Elems: []Value{}}},
		{"#t\r\n", Value{Kind: KindBool, Bool: true}},
		{",-inf\r\n", Value{Kind: KindDouble, Str: []byte("-inf")}},
		{"(12\r\n", Value{Kind: KindBigNumber, Str: []byte("12")}},
		{"=8\r\nmkd:# hi\r\n", Value{Kind: KindVerbatim, Str: []byte("# hi"), Format: "mkd"}},
		{"!3\r\nERR\r\n", Value{Kind: KindBulkError, Str: []byte("ERR")}},
		{"%1\r\n+k\r\n:1\r\n", Value{Kind: KindMap, Elems: []Value{
			{Kind: KindSimple, Str: []byte("k"), Raw: []byte("+k\r\n")},
			{Kind: KindInt, Int: 1, Raw: []byte(":1\r\n")},
		}}},
		{"|1\r\n+ttl\r\n:5\r\n>1\r\n+x\r\n", Value{Kind: KindPush,
			Attrs: []Value{
				{Kind: KindSimple, Str: []byte("ttl"), Raw: []byte("+ttl\r\n")},
				{Kind: KindInt, Int: 5, Raw: []byte(":5\r\n")},
			},
			Elems: []Value{{Kind: KindSimple, Str: []byte("x"), Raw: []byte("+x\r\n")}},
		}},
		{"SET 'k' \"\\x41\"\r\n", Value{Kind: KindInline, Elems: []Value{
			{Kind: KindBulk, Str: []byte("SET"), Raw: []byte("SET")},
			{Kind: KindBulk, Str: []byte("k"), Raw: []byte("'k'")},
			{Kind: KindBulk, Str: []byte("A"), Raw: []byte(`"\x41"`)},
		}}},
	} {
		v, err := Parse([]byte(tt.frame))
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.frame, err)
			continue
		}
		tt.want.Raw = []byte(tt.frame)
		if !reflect.DeepEqual(v, tt.want) {
			t.Errorf("Parse(%q) =\n%#v\nwant\n%#v", tt.frame, v, tt.want)
		}
	}
}

func TestMalformed(t *testing.T) {
	long := strings.Repeat("a", MaxInlineLen+2)
	for _, tt := range []struct {
		frame  string
		offset int
		reason string
	}{
		{"$3\r\nabcd\r\n", 7, "missing CRLF after string payload"},
		{"$3\r\nabc\rX", 7, "missing CRLF after string payload"},
		{"$-2\r\n", 1, "invalid bulk string length"},
		{"$01\r\na\r\n", 1, "invalid bulk string length"},
		{"$+1\r\na\r\n", 1, "invalid bulk string length"},
		{"$\r\n", 1, "invalid bulk string length"},
		{"$536870913\r\n", 1, "bulk string length over 536870912"},
		{"$123456789012345678901", 1, "invalid bulk string length"},
		{"*16777217\r\n", 1, "array length over 16777216"},
		{"%16777217\r\n", 1, "map length over 16777216"},
		{"!-1\r\n", 1, "invalid bulk error length"},
		{"=-1\r\n", 1, "invalid verbatim string length"},
		{"~-1\r\n", 1, "invalid set length"},
		{"%-1\r\n", 1, "invalid map length"},
		{">-1\r\n", 1, "invalid push length"},
		{"|-1\r\n", 1, "invalid attribute length"},
		{":12a\r\n", 1, "invalid integer"},
		{":01\r\n", 1, "invalid integer"},
		{":-0\r\n", 1, "invalid integer"},
		{":+1\r\n", 1, "invalid integer"},
		{":\r\n", 1, "invalid integer"},
		{":9223372036854775808\r\n", 1, "invalid integer"},
		{":-9223372036854775809\r\n", 1, "invalid integer"},
		{":123456789012345678901", 1, "invalid integer"},
		{"+OK\n", 3, "LF without CR"},
		{"+OK\rX", 4, "CR not followed by LF"},
		{"+O\rK\r\n", 3, "CR not followed by LF"},
		{"#x\r\n", 1, "invalid boolean"},
		{"#\r\n", 1, "invalid boolean"},
		{"#tt", 1, "invalid boolean"},
		{"_x\r\n", 1, "invalid null"},
		{",1.2.3\r\n", 1, "invalid double"},
		{",.5\r\n", 1, "invalid double"},
		{",1.\r\n", 1, "invalid double"},
		{",1e\r\n", 1, "invalid double"},
		{",Inf\r\n", 1, "invalid double"},
		{",\r\n", 1, "invalid double"},
		{"," + strings.Repeat("1", MaxInlineLen+1), 1, "double too long"},
		{"(" + strings.Repeat("1", MaxInlineLen+1), 1, "big number too long"},
		{"=3\r\ntxt\r\n", 4, "verbatim string without a format prefix"},
		{"=4\r\ntxt!\r\n", 4, "verbatim string without a format prefix"},
		{"*1\r\n@\r\n", 4, "unknown type byte '@'"},
		{"*2\r\n:1\r\n\r\n", 8, "unknown type byte '\\r'"},
		{"$?\r\n", 1, "streamed bulk strings are not supported"},
		{"*?\r\n", 1, "streamed arrays are not supported"},
		{"%?\r\n", 1, "streamed maps are not supported"},
		{"|1\r\n+a\r\n+b\r\n|0\r\n+c\r\n", 12, "attribute followed by another attribute"},
		{nest(MaxDepth+1, ":1\r\n"), 4 * MaxDepth, "aggregates nested more than 8192 deep"},
		{nest(MaxDepth, "|0\r\n"), 4 * MaxDepth, "aggregates nested more than 8192 deep"},
		{long, 0, "inline command longer than 64 KiB"},
		{long + "\n", 0, "inline command longer than 64 KiB"},
		{long[1:] + "\r\n", 0, "inline command longer than 64 KiB"},
		{"SET \"a\r\n", 4, "unbalanced quotes in inline command"},
		{"SET k 'a\\'\r\n", 6, "unbalanced quotes in inline command"},
		{"SET \"a\"b\r\n", 7, "closing quote not followed by a space in inline command"},
	} {
		n, err := Split([]byte(tt.frame))
		var pe *ProtocolError
		if !errors.As(err, &pe) {
			t.Errorf("Split(%.40q) = %d, %v; want a *ProtocolError", tt.frame, n, err)
			continue
		}
		if n != 0 || pe.Offset != tt.offset || pe.Reason != tt.reason {
			t.Errorf("Split(%.40q) = %d, {%d %q}; want 0, {%d %q}", tt.frame, n, pe.Offset, pe.Reason, tt.offset, tt.reason)
		}
		if want := []byte(tt.frame)[pe.Offset:]; !bytes.HasPrefix(want, pe.Bytes) || len(pe.Bytes) > 64 {
			t.Errorf("Split(%.40q): Bytes = %q; not a short copy of the input at the offset", tt.frame, pe.Bytes)
		}
		if _, perr := Parse([]byte(tt.frame)); !reflect.DeepEqual(perr, err) {
			t.Errorf("Parse(%.40q) = %v; want Split's %v", tt.frame, perr, err)
		}
	}
}

func TestNeedMore(t *testing.T) {
	for _, f := range []string{
		"",
		"$536870912\r\nabc",
		"*16777216\r\n",
		"*16777216\r\n:1\r\n:2\r\n",
		strings.Repeat("*1\r\n", MaxDepth),
		"+" + strings.Repeat("x", 100000),
		strings.Repeat("a", MaxInlineLen) + "\r",
		"SET \"unfinished",
		"|1\r\n+a\r\n+b\r\n",
	} {
		if n, err := Split([]byte(f)); n != 0 || err != nil {
			t.Errorf("Split(%.40q) = %d, %v; want 0, nil", f, n, err)
		}
		var pe *ProtocolError
		if _, err := Parse([]byte(f)); !errors.As(err, &pe) || pe.Reason != "incomplete frame" || pe.Offset != len(f) {
			t.Errorf("Parse(%.40q) = %v; want incomplete frame at %d", f, err, len(f))
		}
	}
}

func TestSplitDoesNotAllocate(t *testing.T) {
	for _, tt := range validFrames {
		f := []byte(tt.frame)
		if a := testing.AllocsPerRun(10, func() { Split(f); Split(f[:len(f)-1]) }); a != 0 {
			t.Errorf("Split(%q) allocates %v times", f, a)
		}
	}
}

func TestParseDoesNotTrustLengths(t *testing.T) {
	f := []byte("*16777216\r\n" + strings.Repeat("*16777216\r\n", 60))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Parse(f); err == nil {
		t.Fatal("Parse of an incomplete frame succeeded")
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("Parse of %d bytes allocated %d bytes", len(f), d)
	}
}

func TestProtocolErrorString(t *testing.T) {
	_, err := Split([]byte(":12a\r\n"))
	if got, want := err.Error(), `resp: invalid integer at byte 1: "12a\r\n"`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	_, err = Parse([]byte("+OK"))
	if got, want := err.Error(), `resp: incomplete frame at byte 3`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	e := &ProtocolError{Offset: 9, Reason: "bad", Bytes: bytes.Repeat([]byte{'x'}, 150)}
	if got, want := e.Error(), fmt.Sprintf("resp: bad at byte 9: %q", strings.Repeat("x", 100)); got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}

func TestParseCommand(t *testing.T) {
	for _, tt := range []struct {
		frame  string
		name   string
		args   []string
		inline bool
		str    string
	}{
		{"*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n", "SET", []string{"set", "k", "v"}, false, `SET "k" "v"`},
		{"*1\r\n$4\r\nPING\r\n", "PING", []string{"PING"}, false, "PING"},
		{"*2\r\n$3\r\nGET\r\n$0\r\n\r\n", "GET", []string{"GET", ""}, false, `GET ""`},
		{"*2\r\n$4\r\nEcHo\r\n$5\r\na\r\nb\"\r\n", "ECHO", []string{"EcHo", "a\r\nb\""}, false, `ECHO "a\r\nb\""`},
		{"*0\r\n", "", nil, false, ""},
		{"PING\r\n", "PING", []string{"PING"}, true, "PING"},
		{"set k v\n", "SET", []string{"set", "k", "v"}, true, `SET "k" "v"`},
		{"SET k \"hello\\x41\\n\\t\\\"q\\\\\"\r\n", "SET", []string{"SET", "k", "helloA\n\t\"q\\"}, true, `SET "k" "helloA\n\t\"q\\"`},
		{"SET k 'it\\'s \"x\"'\r\n", "SET", []string{"SET", "k", `it's "x"`}, true, `SET "k" "it's \"x\""`},
		{"SET k \"\" ''\r\n", "SET", []string{"SET", "k", "", ""}, true, `SET "k" "" ""`},
		{"SET k \"\\xZZ\\q\"\r\n", "SET", []string{"SET", "k", "xZZq"}, true, `SET "k" "xZZq"`},
		{"ECHO \"\\x4a\\x4A\\a\\b\\r\\t\x7f\"\r\n", "ECHO", []string{"ECHO", "JJ\a\b\r\t\x7f"}, true, `ECHO "JJ\a\b\r\t\x7f"`},
		{"\r\n", "", nil, true, ""},
		{"   \r\n", "", nil, true, ""},
		{"\"my cmd\" x\r\n", "MY CMD", []string{"my cmd", "x"}, true, `"MY CMD" "x"`},
		{"SET k " + strings.Repeat("v", 300) + "\r\n", "SET", []string{"SET", "k", strings.Repeat("v", 300)}, true,
			`SET "k" "` + strings.Repeat("v", 191) + "…"},
	} {
		c, err := ParseCommand([]byte(tt.frame))
		if err != nil {
			t.Errorf("ParseCommand(%q): %v", tt.frame, err)
			continue
		}
		var args []string
		for _, a := range c.Args {
			args = append(args, string(a))
		}
		if c.Name != tt.name || !reflect.DeepEqual(args, tt.args) || c.Inline != tt.inline || string(c.Raw) != tt.frame {
			t.Errorf("ParseCommand(%q) = %q %q inline=%v raw=%q; want %q %q inline=%v", tt.frame, c.Name, args, c.Inline, c.Raw, tt.name, tt.args, tt.inline)
		}
		if got := c.String(); got != tt.str {
			t.Errorf("ParseCommand(%q).String() = %q; want %q", tt.frame, got, tt.str)
		}
		if !tt.inline && len(c.Args) > 0 {
			if enc := AppendCommand(nil, c.Args...); string(enc) != tt.frame {
				t.Errorf("AppendCommand(%q) = %q; want %q", args, enc, tt.frame)
			}
		}
	}
}

func TestParseCommandErrors(t *testing.T) {
	for _, tt := range []struct {
		frame  string
		offset int
		reason string
	}{
		{"", 0, "incomplete frame"},
		{"*2\r\n$3\r\nGET\r\n", 13, "incomplete frame"},
		{"*1\r\n$4\r\nPING\r\n+x", 14, "trailing bytes after frame"},
		{"+OK\r\n", 0, "a simple string is not a command"},
		{"*-1\r\n", 1, "a null array is not a command"},
		{"*1\r\n:1\r\n", 4, "command argument is a integer, not a bulk string"},
		{"*1\r\n$-1\r\n", 5, "command argument is a null bulk string"},
		{"*1\r\n$4\r\nPINGX\r\n", 12, "missing CRLF after string payload"},
		{"*1\r\n*1\r\n$1\r\nx\r\n", 4, "command argument is a array, not a bulk string"},
		{"SET \"a\r\n", 4, "unbalanced quotes in inline command"},
		{"PING", 4, "incomplete frame"},
	} {
		_, err := ParseCommand([]byte(tt.frame))
		var pe *ProtocolError
		if !errors.As(err, &pe) {
			t.Errorf("ParseCommand(%q) = %v; want a *ProtocolError", tt.frame, err)
			continue
		}
		if pe.Offset != tt.offset || pe.Reason != tt.reason {
			t.Errorf("ParseCommand(%q) = {%d %q}; want {%d %q}", tt.frame, pe.Offset, pe.Reason, tt.offset, tt.reason)
		}
		if !strings.HasPrefix(err.Error(), "redis command: resp: ") {
			t.Errorf("ParseCommand(%q) error %q does not name the command", tt.frame, err)
		}
	}
}

func TestAppend(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{string(AppendCommand(nil, []byte("SET"), []byte("k"), nil)), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"},
		{string(AppendCommand([]byte("x"))), "x*0\r\n"},
		{string(AppendBulk(nil, []byte("a\r\nb"))), "$4\r\na\r\nb\r\n"},
		{string(AppendSimple(nil, "OK")), "+OK\r\n"},
		{string(AppendSimple(nil, "a\r\nb")), "+a  b\r\n"},
		{string(AppendError(nil, "ERR bad\nthing")), "-ERR bad thing\r\n"},
		{string(AppendInt(nil, -12)), ":-12\r\n"},
		{string(AppendArrayHeader(nil, 2)), "*2\r\n"},
		{string(AppendArrayHeader(nil, -5)), "*-1\r\n"},
		{string(AppendNull(nil)), "$-1\r\n"},
		{string(Value{}.Append(nil)), "_\r\n"},
		{string(Value{Kind: KindMap, Elems: []Value{{Kind: KindInt, Int: 1}}}.Append(nil)), "%1\r\n:1\r\n_\r\n"},
		{string(Value{Kind: KindVerbatim, Str: []byte("x")}.Append(nil)), "=5\r\ntxt:x\r\n"},
		{string(Value{Kind: KindBulkError, Str: []byte("ERR x")}.Append(nil)), "!5\r\nERR x\r\n"},
		{string(Value{Kind: KindArray, Elems: []Value{{Kind: KindInline, Elems: []Value{{Str: []byte("GET")}}}}}.Append(nil)),
			"*1\r\n*1\r\n$3\r\nGET\r\n"},
		{string(Value{Kind: KindInline, Elems: []Value{{Str: []byte("+x")}, {Str: []byte("a'b")}, {Str: []byte("\xff")}, {Str: []byte("é")}}}.Append(nil)),
			"\"+x\" \"a'b\" \xff é\r\n"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q; want %q", tt.got, tt.want)
		}
	}
	// An inline command too long for a line is written as an array.
	big := bytes.Repeat([]byte{0}, MaxInlineLen/2)
	v := Value{Kind: KindInline, Elems: []Value{{Str: []byte("SET")}, {Str: big}}}
	if got, want := v.Append(nil), AppendCommand(nil, []byte("SET"), big); !bytes.Equal(got, want) {
		t.Errorf("long inline command appended as %.40q; want %.40q", got, want)
	}
}

func TestString(t *testing.T) {
	long := bytes.Repeat([]byte("é"), 150)
	for _, tt := range []struct {
		v    Value
		want string
	}{
		{Value{Kind: KindSimple, Str: long}, strings.Repeat("é", 100) + "…"},
		{Value{Kind: KindSimple, Str: []byte("a\x1b[31mb")}, `a\x1b[31mb`},
		{Value{Kind: KindBulk, Str: long}, `"` + strings.Repeat(`\xc3\xa9`, 24) + `\xc3\xa…`},
		{Value{Kind: KindSet}, "(empty set)"},
		{Value{Kind: KindPush, Elems: []Value{}}, "(empty push)"},
		{Value{Kind: KindMap, Elems: []Value{{Kind: KindSimple, Str: []byte("k")}}}, "1# k => "},
		{Value{Kind: 'x'}, "(Kind('x'))"},
		{Value{Kind: KindArray, Elems: []Value{{Kind: KindArray, Elems: []Value{}}, {Kind: KindNull}}}, "1) (empty array) 2) (nil)"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %q; want %q", got, tt.want)
		}
	}
	many := Value{Kind: KindArray}
	for range 1000 {
		many.Elems = append(many.Elems, Value{Kind: KindInt, Int: 7})
	}
	if got := many.String(); len(got) > renderMax+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "1) (integer) 7 2) (integer) 7") {
		t.Errorf("String() of 1000 elements = %q", got)
	}
}

func TestSplitNestedPrefixes(t *testing.T) {
	// A nested reply (COMMAND DOCS's shape) framed as it arrives: every
	// prefix needs more bytes, by the fast path; the whole is one frame.
	frame := []byte("*4\r\n$3\r\nget\r\n*4\r\n$7\r\nsummary\r\n+Get\r\n$5\r\nsince\r\n*2\r\n:1\r\n:-20\r\n$3\r\nset\r\n*0\r\n")
	for i := 0; i < len(frame); i++ {
		if _, st := fastSplit(frame[:i]); st != fastMore {
			t.Errorf("prefix of %d bytes: fast state %d, want more", i, st)
		}
		if n, err := Split(frame[:i]); n != 0 || err != nil {
			t.Errorf("prefix of %d bytes: Split = %d, %v", i, n, err)
		}
	}
	if n, st := fastSplit(frame); st != fastDone || n != len(frame) {
		t.Errorf("whole frame: %d, state %d", n, st)
	}
}
