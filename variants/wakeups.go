package variants

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
)

// The timeouts a blocked request is given: short, when nothing wakes it
// any more; long, far past any recorded wait whether the command counts
// seconds (BLPOP: over 41 days) or milliseconds (XREAD BLOCK, WAIT: an
// hour).
const (
	shortTimeout = "1"
	longTimeout  = "3600000"
)

// wakeDelay is how much later a delayed waker is sent, at least: longer
// than the recorded wait, so that the blocked request waits on.
const wakeDelay = time.Second

// timeoutShift is how much later the events from a woken request's
// recorded answer on are sent when its waker is dropped and it is given
// the short timeout: past that timeout (a second at most), with a second
// to spare.
const timeoutShift = 2 * time.Second

// wakers are the steps that woke or fed the failing request, when it
// blocked: steps of other connections whose requests were sent while it
// waited for its answer (after its request, before its first reply), as
// the recording shows, and that name a key it names (any of them, when
// either's keys are unknown or none: WAIT names none). None when the
// failing request was answered before any other connection sent
// anything, or never.
func (g *gen) wakers() []int {
	if g.failing < 1 || g.failing > len(g.steps) || len(g.span[g.failing]) < 2 {
		return nil
	}
	answered := g.span[g.failing][1]
	conn := g.steps[g.failing-1].Conn()
	kF := g.keysOf(g.failing)
	var out []int
	for j := g.failing + 1; j <= len(g.steps); j++ {
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
	req, _, fields, ok := g.fieldsOf(g.failing)
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
			desc := what("step %d (%s): %s %s → %s, its wakers kept", g.failing, g.describe(g.failing), g.fieldName(count, fields[count]), quote(fields[count].Value), quote(c))
			add(g.withRequest(g.failing, set(count, c), desc, true), "count")
		}
	}
	// The timeout changed, its wakers kept: a request that waits for
	// ever is given one far longer than any recorded wait (an hour or
	// more, in seconds or milliseconds alike), and one with a timeout
	// waits for ever: either way its wakers come first. A dropped waker
	// leaves a request that waited for ever a short timeout, so that it
	// wakes; a delayed one, a request with a timeout none, so that what
	// wakes it is the waker and not a race with its timeout.
	var dropping, delaying []byte // nil: the failing request as recorded
	timeoutWords := func(to string) string {
		return fmt.Sprintf("step %d's %s %s → %s", g.failing, g.fieldName(timeout, fields[timeout]), quote(fields[timeout].Value), quote(to))
	}
	var dropWords, delayWords string
	if timeout >= 0 {
		t, other := fields[timeout].Value, "0"
		if isZero(t) {
			other = longTimeout
			dropping, dropWords = set(timeout, shortTimeout), "; "+timeoutWords(shortTimeout)+", so that it wakes"
		} else {
			delaying, delayWords = set(timeout, "0"), "; "+timeoutWords("0")+", so that the waker wakes it"
		}
		desc := what("step %d (%s): %s %s → %s, its wakers kept", g.failing, g.describe(g.failing), g.fieldName(timeout, fields[timeout]), quote(t), quote(other))
		add(g.withRequest(g.failing, set(timeout, other), desc, true), "timeout")
	}
	for _, j := range wakers {
		d := g.lazily(fmt.Sprintf("wakeup|dropped|%d", j), func() string {
			return what("step %d (%s), which woke or fed step %d, dropped%s", j, g.describe(j), g.failing, dropWords)
		}, func() Variant { return g.droppedWaking(j, dropping) })
		add(d, "dropped")
		l := g.lazily(fmt.Sprintf("wakeup|delayed|%d", j), func() string {
			return what("step %d (%s), which woke or fed step %d, sent %s later%s", j, g.describe(j), g.failing, human(g.delay(j)), delayWords)
		}, func() Variant { return g.delayed(j, delaying) })
		add(l, "delayed")
		t := g.lazily(fmt.Sprintf("wakeup|twice|%d", j), func() string {
			return what("step %d (%s), which woke or fed step %d, delivered twice", j, g.describe(j), g.failing)
		}, func() Variant { return g.twice(j) })
		add(t, "twice")
	}
	return out
}

// blockingFields are the failing request's count and timeout fields
// (Variation.BlockingFields), or the number after a COUNT token and no timeout.
func (g *gen) blockingFields(request []byte, fields []kavach.Field) (count, timeout int) {
	if blocking := g.opts.Variator.BlockingFields; blocking != nil {
		return blocking(request, fields)
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
// the failing request sent as request when not nil: given a short
// timeout, it is answered that much after it was sent, not when the
// dropped waker came, and every event from its recorded answer on is
// sent timeoutShift later, so that the other connections' requests
// still come after what its connection sends once answered, as recorded
// (a worker's HINCRBY after its woken pop, before the web's HGET).
func (g *gen) droppedWaking(j int, request []byte) Variant {
	events := make([]kavach.Event, 0, len(g.events))
	answered := g.span[g.failing][1]
	for i, ev := range g.events {
		if slices.Contains(g.span[j], i) {
			continue
		}
		if request != nil && i >= answered {
			ev.Offset += timeoutShift
		}
		events = append(events, ev)
	}
	g.sendFailing(events, request)
	return g.variant(events, "", false)
}

// sendFailing makes the failing request of events (a variant's, the
// failing step's request Seq kept) request, when not nil.
func (g *gen) sendFailing(events []kavach.Event, request []byte) {
	if request == nil {
		return
	}
	seq := g.steps[g.failing-1].Request.Seq
	for i := range events {
		if events[i].Seq == seq && events[i].Dir == kavach.Request {
			events[i].Data, events[i].Flags = request, events[i].Flags&^kavach.Redacted
			return
		}
	}
}

// delay is how much later step j is sent by delayed: wakeDelay, or the
// failing request's recorded wait when longer.
func (g *gen) delay(j int) time.Duration {
	waited := g.events[g.span[g.failing][1]].Offset - g.events[g.span[g.failing][0]].Offset
	return max(wakeDelay, waited)
}

// delayed is the incident with step j's request, and every event after
// it, sent delay(j) later (the failing request waits that much longer
// for what wakes it), the failing request sent as request when not nil.
func (g *gen) delayed(j int, request []byte) Variant {
	d := g.delay(j)
	events := slices.Clone(g.events)
	for i := g.span[j][0]; i < len(events); i++ {
		events[i].Offset += d
	}
	g.sendFailing(events, request)
	return g.variant(events, "", false)
}
