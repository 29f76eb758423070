// Package cut shortens text for people and agents to read: a value to a
// number of bytes, a block to a number of lines. It is the one place
// Kavach cuts a string, and it never splits a UTF-8 character.
package cut

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Mark ends a string String cut.
const Mark = "…"

// String cuts s to at most max bytes, at the start of a character, and
// marks the cut with Mark (so a cut string is up to len(Mark) bytes
// longer than max). s is returned as it is when it fits. A max of 0 or
// less keeps nothing but the mark.
func String(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Mark
}

// Lines keeps the first n lines of s (a trailing newline dropped), and
// says in a last line how many more the report has.
func Lines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("(+%d lines in the report)", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}
