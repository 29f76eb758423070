package mcpserver

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/kavach-dev/kavach/internal/cut"
)

// echoMax bounds a value an error quotes back to the client (a path, a
// tool's name, a wrong argument): an agent's context should not pay for
// a 900 KiB path twice.
const echoMax = 200

// echo is a value quoted back in an error: whole when short, else its
// start and its true size.
func echo(s string) string {
	if len(s) <= echoMax {
		return s
	}
	return fmt.Sprintf("%s (%d bytes)", cut.String(s, echoMax), len(s))
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
	return cut.String(b.String(), total)
}
