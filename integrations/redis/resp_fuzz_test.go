package redis

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// addSeeds adds every valid frame, alone and followed by another, and a
// few malformed ones.
func addSeeds(f *testing.F) {
	for _, tt := range validFrames {
		f.Add([]byte(tt.frame))
		f.Add([]byte(tt.frame + "*1\r\n$4\r\nPING\r\n"))
	}
	for _, s := range []string{"$3\r\nabcd\r\n", ":01\r\n", "*1\r\n@\r\n", "SET \"a\r\n", "+OK\n", "$?\r\n", "|1\r\n+a\r\n+b\r\n|0\r\n+c\r\n"} {
		f.Add([]byte(s))
	}
}

// checkValue checks what holds of every value Parse returns for a frame:
// it keeps the frame's bytes, renders, and re-encodes to a frame that
// Split finds whole and that re-encodes to itself.
func checkValue(t *testing.T, frame []byte, v Value) {
	t.Helper()
	if !bytes.Equal(v.Raw, frame) {
		t.Fatalf("Parse(%q).Raw = %q", frame, v.Raw)
	}
	_ = v.String()
	enc := v.Append(nil)
	if n, err := Split(enc); n != len(enc) || err != nil {
		t.Fatalf("Split(Append(Parse(%q)) = %q) = %d, %v", frame, enc, n, err)
	}
	v2, err := Parse(enc)
	if err != nil {
		t.Fatalf("Parse(Append(Parse(%q)) = %q): %v", frame, enc, err)
	}
	if enc2 := v2.Append(nil); !bytes.Equal(enc2, enc) {
		t.Fatalf("Append is not canonical: %q re-encodes as %q, then as %q", frame, enc, enc2)
	}
}

func FuzzSplit(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Split(data)
		switch {
		case err != nil:
			var pe *ProtocolError
			if !errors.As(err, &pe) || n != 0 || pe.Offset < 0 || pe.Offset > len(data) {
				t.Fatalf("Split(%q) = %d, %#v", data, n, err)
			}
			for i := len(data) + 1; i <= len(data)+3; i++ { // an error stays an error
				if m, err2 := Split(append(data[:len(data):len(data)], "\r\n+"[:i-len(data)]...)); m != 0 || err2 == nil {
					t.Fatalf("Split(%q) = %v, but more bytes give %d, %v", data, err, m, err2)
				}
			}
		case n == 0:
			if _, err := Parse(data); err == nil {
				t.Fatalf("Split(%q) needs more, but Parse succeeds", data)
			}
		default:
			if n > len(data) {
				t.Fatalf("Split(%q) = %d", data, n)
			}
			v, err := Parse(data[:n])
			if err != nil {
				t.Fatalf("Split(%q) = %d, but Parse(%q): %v", data, n, data[:n], err)
			}
			checkValue(t, data[:n], v)
			if n <= 4096 {
				for i := range n {
					if m, err := Split(data[:i]); m != 0 || err != nil {
						t.Fatalf("Split(%q) = %d, but its prefix %q gives %d, %v", data, n, data[:i], m, err)
					}
				}
			}
			_, _ = ParseCommand(data[:n])
		}
	})
}

func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		n, serr := Split(data)
		if whole := len(data) > 0 && n == len(data) && serr == nil; whole != (err == nil) {
			t.Fatalf("Parse(%q) = %v, but Split = %d, %v", data, err, n, serr)
		}
		if err != nil {
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(data) {
				t.Fatalf("Parse(%q) = %#v", data, err)
			}
			return
		}
		checkValue(t, data, v)
	})
}

func FuzzParseCommand(f *testing.F) {
	addSeeds(f)
	f.Add([]byte("SET k \"hello\\x41\\n\" 'it\\'s'\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCommand(data)
		if err != nil {
			return
		}
		_ = c.String()
		if n, err := Split(data); n != len(data) || err != nil {
			t.Fatalf("ParseCommand(%q) succeeds, but Split = %d, %v", data, n, err)
		}
		var want []byte
		if len(c.Args) > 0 {
			want = bytes.Clone(c.Args[0])
		}
		for i, b := range want {
			if 'a' <= b && b <= 'z' {
				want[i] = b - 'a' + 'A'
			}
		}
		if c.Name != string(want) {
			t.Fatalf("ParseCommand(%q): Name %q for Args %q", data, c.Name, c.Args)
		}
		enc := AppendCommand(nil, c.Args...)
		if !c.Inline && len(c.Args) > 0 && !bytes.Equal(enc, data) {
			t.Fatalf("AppendCommand(ParseCommand(%q).Args) = %q", data, enc)
		}
		c2, err := ParseCommand(enc)
		if err != nil || !equalArgs(c2.Args, c.Args) {
			t.Fatalf("ParseCommand(%q) = %q, but its re-encoding %q gives %q, %v", data, c.Args, enc, c2.Args, err)
		}
		if c.Inline { // and as an inline line
			v, err := Parse(data)
			if err != nil {
				t.Fatalf("ParseCommand(%q) succeeds, but Parse: %v", data, err)
			}
			line := v.Append(nil)
			c3, err := ParseCommand(line)
			if err != nil || !equalArgs(c3.Args, c.Args) {
				t.Fatalf("ParseCommand(%q) = %q, but its re-encoding %q gives %q, %v", data, c.Args, line, c3.Args, err)
			}
		}
	})
}

func equalArgs(a, b [][]byte) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// FuzzFastSplit: where the fast path answers, the general scanner gives
// the same frame.
func FuzzFastSplit(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, st := fastSplit(data)
		s := scanner{data: data}
		_, m, err := s.top()
		switch st {
		case fastDone:
			if err != nil || m != n {
				t.Fatalf("fastSplit(%q) = %d, the scanner says %d, %v", data, n, m, err)
			}
		case fastMore:
			if err != errIncomplete {
				t.Fatalf("fastSplit(%q) wants more bytes, the scanner says %d, %v", data, m, err)
			}
		}
	})
}

// FuzzMinFrameLen: the length MinFrameLen promises is never more than the
// frame's, for any prefix of a frame, and any bytes at all do not panic.
func FuzzMinFrameLen(f *testing.F) {
	for _, s := range []string{
		"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$10\r\n0123456789\r\n",
		"$5\r\nhello\r\n",
		"*2\r\n*1\r\n$1\r\na\r\n:12\r\n",
		"+OK\r\n",
		"$-1\r\n",
	} {
		f.Add([]byte(s), len(s)/2)
	}
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		got := Integration{}.MinFrameLen(data, true)
		n, err := Split(data)
		if err != nil || n == 0 {
			return
		}
		if got > n {
			t.Fatalf("MinFrameLen(%q) = %d, more than the frame's %d bytes", data, got, n)
		}
		if cut = min(max(cut, 0), n); cut < n {
			if m := (Integration{}).MinFrameLen(data[:cut], true); m > n {
				t.Fatalf("MinFrameLen of the first %d bytes of %q = %d, more than the frame's %d", cut, data, m, n)
			}
		}
	})
}

// TestMinFrameLenLargeValue: the length of a command whose last argument
// is cut short is known once that argument's header has come.
func TestMinFrameLenLargeValue(t *testing.T) {
	head := "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$50000000\r\n"
	want := len(head) + 50000000 + 2
	for _, tc := range []struct {
		data string
		want int
	}{
		{head + "xyz", want},
		{head, want},
		{head[:len(head)-3], 0},
		{"$50000000\r\nab", 11 + 50000002},
	} {
		if got := (Integration{}).MinFrameLen([]byte(tc.data), true); got != tc.want && !(tc.want == 0 && got <= len(tc.data)) {
			t.Errorf("MinFrameLen(%.40q) = %d, want %d", tc.data, got, tc.want)
		}
	}
}
