package variants

import (
	"fmt"
	"slices"

	"github.com/kavach-dev/kavach"
)

// modes are the variants that turn a mode of a connection on or off
// (kavach.Variation.Modes; docs/variants.md, "Connection modes"), kind
// "mode": for the failing request and each earlier step that writes a
// key it names (PlaceWriter), the mode request right before it on its
// connection, the step itself kept; as variants of the incident, kept
// when the old build still fails the recorded way. A fix can mend one
// mode and not another (the reply of a RESP2 connection, not of a RESP3
// one).
func (g *gen) modes(out []Variant, affecting []int) []Variant {
	if g.opts.Variator.Modes == nil {
		return out
	}
	causes := []int{g.failing}
	for _, j := range affecting {
		if g.place[j] == PlaceWriter {
			causes = append(causes, j)
		}
	}
	for _, n := range causes {
		what, place := "", PlaceFailing
		if n != g.failing {
			what, place = " (writes the failing request's key)", PlaceWriter
		}
		for _, m := range g.opts.Variator.Modes(g.steps[n-1].Request.Data, g.connEarlier(n), g.opts.Schema) {
			sub := kavach.Substitution{Setup: [][]byte{m.Request}, Request: g.steps[n-1].Request.Data}
			v := g.substituted(n, sub, fmt.Sprintf("step %d%s: on a connection in another mode: %s", n, what, m.What), false)
			v.group, v.primary, v.Kind, v.Place, v.cause = fmt.Sprintf("step %d mode", n), n == g.failing, "mode", place, n
			out = g.add(out, v)
		}
	}
	return out
}

// modeRegressions are the regression variants of the modes: the
// connection of the failing request, and of each earlier step writing a
// key it names, turned to another mode before its first request, the
// recording cut before the failing step; kept when the old build handles
// them, and the new build must answer as the old one. cut is the failing
// request's event index.
func (g *gen) modeRegressions(out []Variant, affecting []int, cut int) []Variant {
	if g.opts.Variator.Modes == nil || g.failing > len(g.steps) {
		return out
	}
	conns := []uint64{g.steps[g.failing-1].Conn()}
	for _, j := range affecting {
		if c := g.steps[j-1].Conn(); g.place[j] == PlaceWriter && !slices.Contains(conns, c) {
			conns = append(conns, c)
		}
	}
	for _, c := range conns {
		first := 0
		for j := 1; j < g.failing; j++ {
			if g.steps[j-1].Conn() == c {
				first = j
				break
			}
		}
		if first == 0 {
			continue // the connection's first request is the failing one
		}
		for _, m := range g.opts.Variator.Modes(g.steps[first-1].Request.Data, nil, g.opts.Schema) {
			sub := kavach.Substitution{Setup: [][]byte{m.Request}, Request: g.steps[first-1].Request.Data}
			v := g.substituted(first, sub, fmt.Sprintf("regression: step %d: its connection in another mode from its first request: %s", first, m.What), true)
			v.group, v.Kind, v.Place = fmt.Sprintf("step %d mode", first), "mode", PlaceRegression
			v.build = cutBefore(v.build, cut+1, g.failing)
			out = g.add(out, v)
		}
	}
	return out
}

// connEarlier are the requests sent on step n's connection before it,
// oldest first.
func (g *gen) connEarlier(n int) [][]byte {
	c := g.steps[n-1].Conn()
	var out [][]byte
	for j := 1; j < n; j++ {
		if s := g.steps[j-1]; s.Conn() == c {
			out = append(out, s.Request.Data)
		}
	}
	return out
}
