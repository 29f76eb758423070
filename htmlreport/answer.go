package htmlreport

import (
	"encoding/json"
	"fmt"
	textcut "github.com/kavach-dev/kavach/internal/cut"
	"sort"
	"strings"

	"github.com/kavach-dev/kavach/replay"
)

// Limits on what one answer shows; the report has the rest.
const (
	maxAnswerLines = 300
	maxLineChars   = 400
)

// answerLine is one line of an answer as the finding shows it: a value at
// a path of the normalized replies, indented by its depth.
type answerLine struct {
	Indent int
	Text   string
	Class  string // "diff", "noise" or ""
	Title  string // why it is highlighted or greyed
}

// marker says how a path of one step's answer is to be shown: as a
// difference that counts, or as noise (with its reason).
type marker struct {
	diffs []string          // paths that differ and count
	noise map[string]string // noise path -> reason
}

// class is how a line at path shows: a difference where a counted diff's
// path is the line's or lies inside it (a text body's line or token is
// shown on the line of the body), noise likewise, else plain.
func (m marker) class(path string) (string, string) {
	for _, d := range m.diffs {
		if within(d, path) || within(path, d) {
			return "diff", "differs from the recording: " + d
		}
	}
	for p, why := range m.noise {
		if within(p, path) || within(path, p) {
			return "noise", why
		}
	}
	return "", ""
}

// within: path p lies inside (or is) path q.
func within(p, q string) bool {
	return p == q || strings.HasPrefix(p, q) && strings.IndexByte("[.:", p[len(q)]) >= 0
}

// answerLines renders a step's normalized replies as indented lines, each
// with the path the comparisons name it by (replay.Compare): reply[0],
// reply[0][2], reply[0].body.items.
func answerLines(output []any, m marker) []answerLine {
	var out []answerLine
	more := 0
	var walk func(path, label string, v any, depth int)
	add := func(depth int, text, path string) {
		if len(out) >= maxAnswerLines {
			more++
			return
		}
		class, title := m.class(path)
		out = append(out, answerLine{Indent: depth, Text: cut(text, maxLineChars), Class: class, Title: title})
	}
	walk = func(path, label string, v any, depth int) {
		switch x := v.(type) {
		case []any:
			if len(x) == 0 {
				add(depth, label+"[]", path)
				return
			}
			add(depth, label+"[", path)
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), "", e, depth+1)
			}
			add(depth, "]", path)
		case map[string]any:
			if len(x) == 0 {
				add(depth, label+"{}", path)
				return
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			add(depth, label+"{", path)
			for _, k := range keys {
				walk(path+"."+k, k+": ", x[k], depth+1)
			}
			add(depth, "}", path)
		case string:
			// A multi-line text (a /metrics page) is shown line by line:
			// its paths go to the line (reply[0].body:2).
			if strings.Contains(x, "\n") {
				add(depth, label+"text:", path)
				for i, line := range strings.Split(strings.TrimRight(x, "\n"), "\n") {
					add(depth+1, line, fmt.Sprintf("%s:%d", path, i+1))
				}
				return
			}
			add(depth, label+leaf(x), path)
		default:
			add(depth, label+leaf(x), path)
		}
	}
	for i, v := range output {
		walk(fmt.Sprintf("reply[%d]", i), fmt.Sprintf("reply[%d] ", i), v, 0)
	}
	if more > 0 {
		out = append(out, answerLine{Text: fmt.Sprintf("(+%d more lines in the report)", more), Class: "more"})
	}
	return out
}

func leaf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// noiseReason says why a noise field is left out of comparisons, with
// the values seen there.
func noiseReason(f replay.NoiseField) string {
	s := "noise: differed between the recording and the old build's own replays"
	if f.Of > 0 {
		s += fmt.Sprintf(" (in %d of %d)", f.Differed, f.Of)
	}
	if len(f.Values) > 0 {
		s += "; values seen: " + strings.Join(f.Values, ", ")
	}
	return s + "; left out of every comparison"
}

// cut shortens s to n bytes at most, on a character boundary
// (cut.String), saying how many bytes it left out.
func cut(s string, n int) string {
	c := textcut.String(s, n)
	if c == s {
		return s
	}
	kept := len(c) - len(textcut.Mark)
	return c + fmt.Sprintf(" (+%d bytes)", len(s)-kept)
}
