package cut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Each row says why it is there: the cut lands on every byte of a
// multi-byte character, and never keeps half of it.
func TestStringNeverSplitsACharacter(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
		why  string
	}{
		{"hello", 10, "hello", "fits: returned as it is, unmarked"},
		{"hello", 5, "hello", "exactly max bytes: fits"},
		{"hello", 3, "hel…", "ASCII: cut at max"},
		{"aé", 2, "a…", "max lands inside é (2 bytes): cut before it"},
		{"a€b", 2, "a…", "max lands on €'s 2nd byte"},
		{"a€b", 3, "a…", "max lands on €'s 3rd byte"},
		{"a€b", 4, "a€…", "max right after €: kept whole"},
		{"😀x", 3, "…", "a 4-byte character cut anywhere inside: nothing of it kept"},
		{"abc", 0, "…", "max 0: only the mark"},
		{"abc", -4, "…", "negative max: only the mark, no panic"},
	} {
		got := String(tc.s, tc.max)
		if got != tc.want {
			t.Errorf("String(%q, %d) = %q, want %q (%s)", tc.s, tc.max, got, tc.want, tc.why)
		}
		if utf8.ValidString(tc.s) && !utf8.ValidString(got) {
			t.Errorf("String(%q, %d) = %q: not valid UTF-8 (%s)", tc.s, tc.max, got, tc.why)
		}
	}
}

// Every cut of a string of multi-byte characters, at every length, is
// valid UTF-8 and a prefix of the string.
func TestStringEveryLength(t *testing.T) {
	s := strings.Repeat("aé€😀", 5)
	for max := -1; max <= len(s)+1; max++ {
		got := String(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("String(s, %d) = %q: not valid UTF-8", max, got)
		}
		if !strings.HasPrefix(s, strings.TrimSuffix(got, Mark)) {
			t.Fatalf("String(s, %d) = %q: not a prefix of s", max, got)
		}
	}
}

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\nb\n", 2, "a\nb"},
		{"a\nb\nc\nd", 2, "a\nb\n(+2 lines in the report)"},
		{"", 1, ""},
	} {
		if got := Lines(tc.s, tc.n); got != tc.want {
			t.Errorf("Lines(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// FuzzString: for any string and any max, the cut never panics, is a
// prefix of s (with the mark when cut), is at most max bytes before the
// mark, and, when s is valid UTF-8, is valid UTF-8.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "hello", "aé€😀", "\xff\xfe", "é\x80\x80\x80x"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		got := String(s, max)
		if len(s) <= max {
			if got != s {
				t.Fatalf("String(%q, %d) = %q: a string that fits changed", s, max, got)
			}
			return
		}
		kept, ok := strings.CutSuffix(got, Mark)
		if !ok || !strings.HasPrefix(s, kept) || len(kept) > max && max >= 0 || max < 0 && kept != "" {
			t.Fatalf("String(%q, %d) = %q: not a marked prefix of at most max bytes", s, max, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("String(%q, %d) = %q: split a character", s, max, got)
		}
	})
}

// FuzzLines: Lines never panics and keeps at most n+1 lines.
func FuzzLines(f *testing.F) {
	f.Add("a\nb\nc", 2)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1000 {
			return
		}
		if got := strings.Count(Lines(s, n), "\n"); got > n {
			t.Fatalf("Lines(%q, %d): %d newlines", s, n, got)
		}
	})
}
