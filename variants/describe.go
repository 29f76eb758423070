package variants

import (
	"fmt"
	"strconv"
	"time"

	"github.com/kavach-dev/kavach"
)

// fieldName names field i in the protocol's words (Variation.FieldName), else as an
// argument.
func (g *gen) fieldName(i int, f kavach.Field) string {
	if name := g.opts.Variator.FieldName; name != nil {
		return name(i, f)
	}
	return argName(i, f)
}

// keyWords are the protocol's words for a missing and another key.
func (g *gen) keyWords() (missing, other string) {
	if words := g.opts.Variator.KeyWords; words != nil {
		return words()
	}
	return "a key that does not exist", "another recorded key"
}

func argName(i int, f kavach.Field) string {
	if f.Name != "" {
		return fmt.Sprintf("argument %d (%s)", i+1, f.Name)
	}
	return fmt.Sprintf("argument %d", i+1)
}

func quote(s string) string {
	if len(s) > 24 {
		return strconv.Quote(s[:12]) + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

func signed(d time.Duration) string {
	if d < 0 {
		return "-" + human(-d)
	}
	return "+" + human(d)
}

func human(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func (g *gen) describe(n int) string {
	return g.opts.Codec.DescribeRequest(g.steps[n-1].Request.Data, 48)
}
