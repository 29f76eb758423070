package variants

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
)

// Blocking is what a Variator implements whose protocol has requests
// that wait for other connections (Redis: BLPOP, BLMPOP, BZPOPMIN, XREAD
// BLOCK, WAIT): which of a request's fields is its count and which its
// timeout. Without it, a count is the number after a COUNT token and a
// request has no timeout field.
type Blocking interface {
	// BlockingFields are the indexes, in fields as Fields gives them for
	// request, of the request's count (how many it takes once woken) and
	// of its timeout; -1 for none.
	BlockingFields(request []byte, fields []kavach.Field) (count, timeout int)
}

// wakeDelay is how much later a delayed waker is sent, at least: longer
// than the recorded wait, so that the blocked request waits on.
const wakeDelay = time.Second

// wakers are the steps that woke or fed the failing request, when it
// blocked: steps of other connections whose requests were sent while it
// waited for its answer (after its request, before its first reply), as
// the recording shows, and that name a key it names (any of them, when
// either's keys are unknown or none: WAIT names none). None when the
// failing request was answered before any other connection sent
// anything, or never.
func (g *gen) wakers() []int {
	if g.F < 1 || g.F > len(g.steps) || len(g.span[g.F]) < 2 {
		return nil
	}
	answered := g.span[g.F][1]
	conn := g.steps[g.F-1].Conn()
	kF := g.keysOf(g.F)
	var out []int
	for j := g.F + 1; j <= len(g.steps); j++ {
		if g.span[j][0] > answered {
			break
		}
		if g.steps[j-1].Conn() == conn {
			continue
		}
		if kj := g.keysOf(j); len(kF) > 0 && len(kj) > 0 && !anyRelate(kj, kF) {
			continue
		}
		out = append(out, j)
	}
	return out
}

// keysOf are step n's keys as Options.Keys gives them; nil when unknown.
func (g *gen) keysOf(n int) []string {
	if n-1 < len(g.opts.Keys) {
		return g.opts.Keys[n-1]
	}
	return nil
}

// wakeups are the across-connections variants of a failing request that
// blocked and was woken by another connection (docs/variants.md, "Across
// connections"): each waker dropped (and the request given a timeout, so
// that it wakes), sent later, or delivered twice; the request's own count
// and timeout changed, its wakers kept. They are regression variants
// kept whole: the old build must handle them, failing nowhere, and the
// new build must answer every step, the woken request's too, as the old
// build does. None when the request did not block.
func (g *gen) wakeups() []Variant {
	wakers := g.wakers()
	if len(wakers) == 0 {
		return nil
	}
	req := g.steps[g.F-1].Request
	if req.Flags&kavach.ParseError != 0 {
		return nil
	}
	_, fields, ok := g.opts.Variator.Fields(req.Data, g.opts.Schema)
	if !ok {
		return nil
	}
	count, timeout := g.blockingFields(req.Data, fields)
	set := func(i int, value string) []byte {
		f := slices.Clone(fields)
		f[i].Value = value
		return g.opts.Variator.Rebuild(req.Data, f)
	}
	var out []Variant
	add := func(v Variant, group string) {
		v.Regression, v.Kind, v.Place, v.group, v.primary = true, "wakeup", PlaceFailing, "wakeup "+group, true
		out = g.add(out, v)
	}
	what := func(format string, a ...any) string { return "wake-up: " + fmt.Sprintf(format, a...) }
	if count >= 0 {
		for _, c := range counts(fields[count].Value) {
			desc := what("step %d (%s): %s %s → %s, its wakers kept", g.F, g.describe(g.F), g.fieldName(count, fields[count]), quote(fields[count].Value), quote(c))
			add(g.withRequest(g.F, set(count, c), desc, true), "count")
		}
	}
	// A request that waits for ever is given a short timeout, and one
	// with a timeout waits for ever: its wakers still come.
	short := ""
	if timeout >= 0 {
		t := fields[timeout].Value
		other := "0"
		if isZero(t) {
			other, short = "1", "1"
		}
		desc := what("step %d (%s): %s %s → %s, its wakers kept", g.F, g.describe(g.F), g.fieldName(timeout, fields[timeout]), quote(t), quote(other))
		add(g.withRequest(g.F, set(timeout, other), desc, true), "timeout")
	}
	var request []byte // nil: the failing request as recorded
	if short != "" {
		request = set(timeout, short)
	}
	for _, j := range wakers {
		desc := func() string {
			s := fmt.Sprintf("step %d (%s), which woke or fed step %d, dropped", j, g.describe(j), g.F)
			if short != "" {
				s += fmt.Sprintf("; step %d's %s %s → %s, so that it wakes", g.F, g.fieldName(timeout, fields[timeout]), quote(fields[timeout].Value), quote(short))
			}
			return "wake-up: " + s
		}
		d := g.lazily(fmt.Sprintf("wakeup|dropped|%d", j), desc, func() Variant { return g.droppedWaking(j, request) })
		add(d, "dropped")
		l := g.lazily(fmt.Sprintf("wakeup|delayed|%d", j), func() string {
			return what("step %d (%s), which woke or fed step %d, sent %s later", j, g.describe(j), g.F, human(g.delay(j)))
		}, func() Variant { return g.delayed(j) })
		add(l, "delayed")
		t := g.lazily(fmt.Sprintf("wakeup|twice|%d", j), func() string {
			return what("step %d (%s), which woke or fed step %d, delivered twice", j, g.describe(j), g.F)
		}, func() Variant { return g.twice(j) })
		add(t, "twice")
	}
	return out
}

// blockingFields are the failing request's count and timeout fields
// (Blocking), or the number after a COUNT token and no timeout.
func (g *gen) blockingFields(request []byte, fields []kavach.Field) (count, timeout int) {
	if b, ok := g.opts.Variator.(Blocking); ok {
		return b.BlockingFields(request, fields)
	}
	count = -1
	for i := 0; i+1 < len(fields); i++ {
		if fields[i].Type == kavach.FieldToken && strings.EqualFold(fields[i].Value, "COUNT") {
			count = i + 1
		}
	}
	return count, -1
}

// counts are the other counts a woken request may take: one, one fewer
// and one more, twice as many; all positive.
func counts(v string) []string {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return []string{"1"}
	}
	var out []string
	for _, c := range []int64{1, n - 1, n + 1, 2 * n} {
		if c > 0 && c != n && !slices.Contains(out, strconv.FormatInt(c, 10)) {
			out = append(out, strconv.FormatInt(c, 10))
		}
	}
	return out
}

// isZero reports whether a timeout waits for ever: zero in any form
// ("0", "0.0").
func isZero(v string) bool {
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && f == 0
}

// droppedWaking is the incident without step j's request and replies,
// the failing request sent as request when not nil (given a timeout,
// when it had none, so that it wakes).
func (g *gen) droppedWaking(j int, request []byte) Variant {
	events := make([]kavach.Event, 0, len(g.events))
	failing := g.span[g.F][0]
	for i, ev := range g.events {
		if slices.Contains(g.span[j], i) {
			continue
		}
		if i == failing && request != nil {
			ev.Data, ev.Flags = request, ev.Flags&^kavach.Redacted
		}
		events = append(events, ev)
	}
	return g.variant(events, "", false)
}

// delay is how much later step j is sent by delayed: wakeDelay, or the
// failing request's recorded wait when longer.
func (g *gen) delay(j int) time.Duration {
	waited := g.events[g.span[g.F][1]].Offset - g.events[g.span[g.F][0]].Offset
	return max(wakeDelay, waited)
}

// delayed is the incident with step j's request, and every event after
// it, sent delay(j) later: the failing request waits that much longer
// for what wakes it.
func (g *gen) delayed(j int) Variant {
	d := g.delay(j)
	events := slices.Clone(g.events)
	for i := g.span[j][0]; i < len(events); i++ {
		events[i].Offset += d
	}
	return g.variant(events, "", false)
}
