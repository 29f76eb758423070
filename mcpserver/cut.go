package mcpserver

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// echoMax bounds a value an error quotes back to the client (a path, a
// tool's name, a wrong argument): an agent's context should not pay for
// a 900 KiB path twice.
const echoMax = 200

// cutString cuts s to at most max bytes, at the start of a character,
// marking the cut.
func cutString(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max] + "…"
}

// echo is a value quoted back in an error: whole when short, else its
// start and its true size.
func echo(s string) string {
	if len(s) <= echoMax {
		return s
	}
	return fmt.Sprintf("%s (%d bytes)", cutString(s, echoMax), len(s))
}

// cutWords cuts each run of text without spaces longer than echoMax in
// msg, an error's message that may quote what the client sent, and then
// the whole message to a few thousand bytes.
func cutWords(msg string) string {
	const total = 4000
	var b strings.Builder
	start := -1 // where the word being read began
	flush := func(end int) {
		if start >= 0 {
			b.WriteString(echo(msg[start:end]))
			start = -1
		}
	}
	for i, r := range msg {
		if unicode.IsSpace(r) {
			flush(i)
			b.WriteRune(r)
		} else if start < 0 {
			start = i
		}
	}
	flush(len(msg))
	return cutString(b.String(), total)
}
