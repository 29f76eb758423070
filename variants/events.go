package variants

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"

	"github.com/kavach-dev/kavach"
)

// variant wraps events, a slice of its own, as a variant: every step's
// origin is found by its request's sequence number (0 for a new event),
// then the events are numbered afresh from 1.
func (g *gen) variant(events []kavach.Event, what string, regression bool) Variant {
	if g.orig == nil {
		g.orig = make(map[uint64]int, len(g.steps))
		for _, s := range g.steps {
			g.orig[s.Request.Seq] = s.N
		}
	}
	origin := make([]int, 0, len(g.steps)+1)
	for i, ev := range events {
		if ev.Dir == kavach.Request {
			origin = append(origin, g.orig[ev.Seq])
		}
		events[i].Seq = uint64(i + 1)
	}
	return Variant{Description: what, Regression: regression, Events: events, Origin: origin}
}

// mutated is the incident with step n's request mutated by m (made now
// or lazily), described by format with n and what m changed.
func (g *gen) mutated(n int, m mutation, format string, regression bool) Variant {
	if m.build == nil {
		return g.withRequest(n, m.request, fmt.Sprintf(format, n, m.what), regression)
	}
	b := make([]byte, 0, 32+len(m.id))
	b = append(b, "lazy|"...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = strconv.AppendBool(append(b, '|'), regression)
	b = append(append(b, '|'), m.id...)
	v := Variant{Regression: regression, key: sha256.Sum256(b)}
	v.describe = func() string { return fmt.Sprintf(format, n, m.describe()) }
	v.build = func() ([]kavach.Event, []int) {
		events := slices.Clone(g.events)
		i := g.span[n][0]
		events[i].Data = m.build()
		events[i].Flags &^= kavach.Redacted
		w := g.variant(events, "", false)
		return w.Events, w.Origin
	}
	return v
}

// withRequest is the incident with step n's request replaced. A changed
// request is a new input: its origin is kept for noise, since its replies
// are compared old build against new build only.
func (g *gen) withRequest(n int, request []byte, what string, regression bool) Variant {
	v := Variant{Description: what, Regression: regression, key: lazyKey(n, regression, nil, request)}
	v.build = func() ([]kavach.Event, []int) {
		events := slices.Clone(g.events)
		i := g.span[n][0]
		events[i].Data = request
		events[i].Flags &^= kavach.Redacted
		w := g.variant(events, "", false)
		return w.Events, w.Origin
	}
	return v
}

// moved is the incident with the failing request (and its replies, and
// the server's close of its connection when the recording ended it there)
// moved right before step j, at step j's time. Moving the close along
// makes the replay wait for the moved request's outcome where it now is.
func (g *gen) moved(j int) Variant {
	block := slices.Clone(g.span[g.failing])
	conn := g.steps[g.failing-1].Conn()
	for i := slices.Max(block) + 1; i < len(g.events); i++ {
		if ev := g.events[i]; ev.Conn == conn {
			if ev.Dir == kavach.Close && string(ev.Data) == "server" {
				block = append(block, i)
			}
			break
		}
	}
	at := g.span[j][0]
	var moved, rest []kavach.Event
	for i, ev := range g.events {
		if slices.Contains(block, i) {
			ev.Offset = g.events[at].Offset
			moved = append(moved, ev)
		} else {
			rest = append(rest, ev)
		}
	}
	// Insert before step j's request, which keeps its index in rest
	// (everything moved came after it).
	events := slices.Concat(rest[:at], moved, rest[at:])
	return g.variant(events, fmt.Sprintf("step %d (%s) moved before step %d", g.failing, g.describe(g.failing), j), false)
}

// dropped is the incident without step j's request and replies.
func (g *gen) dropped(j int) Variant {
	var events []kavach.Event
	for i, ev := range g.events {
		if !slices.Contains(g.span[j], i) {
			events = append(events, ev)
		}
	}
	return g.variant(events, fmt.Sprintf("step %d (%s) dropped", j, g.describe(j)), false)
}

// twice is the incident with step j's request and replies delivered
// twice; both copies have step j as their origin.
func (g *gen) twice(j int) Variant {
	var events []kavach.Event
	last := slices.Max(g.span[j])
	for i, ev := range g.events {
		events = append(events, ev)
		if i == last {
			for _, k := range g.span[j] {
				// The copy keeps its Seq, so the repeated step keeps
				// step j as its origin, and with it step j's noise.
				events = append(events, g.events[k])
			}
		}
	}
	return g.variant(events, fmt.Sprintf("step %d (%s) delivered twice", j, g.describe(j)), false)
}
