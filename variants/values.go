package variants

import "github.com/kavach-dev/kavach"

// values are step n's request with one value varied inside its argument
// (numbers in other forms, parts of structured values, its script), as
// far as the Variator knows them (kavach.Variation.Values). Each has its
// kind; the variants of one part of the request (Group) share their turns
// when the budget is sampled.
func (g *gen) values(n int) []substitution {
	values := after(g.opts.Variator, g.steps, n).Values
	if values == nil {
		return nil
	}
	req := g.steps[n-1].Request
	at := g.opts.Start
	if !at.IsZero() {
		at = at.Add(req.Offset)
	}
	var out []substitution
	for _, s := range values(req.Data, g.opts.Schema, at) {
		if s.Kind == "" {
			continue
		}
		out = append(out, substitution{s, s.Kind})
	}
	return out
}

// after is the Variation for step n's request: v told the requests of
// the steps before it (kavach.Variation.After: an EVALSHA's script is in
// an earlier SCRIPT LOAD), or v itself when it does not ask for them.
func after(v *kavach.Variation, steps []kavach.Step, n int) *kavach.Variation {
	if v.After == nil || n < 1 {
		return v
	}
	earlier := make([][]byte, 0, n-1)
	for _, s := range steps[:min(n-1, len(steps))] {
		if s.Request.Flags&kavach.ParseError == 0 {
			earlier = append(earlier, s.Request.Data)
		}
	}
	return v.After(earlier)
}

// LeftWhole says what the Variator left whole in the failing request
// (step f) and why, as far as it says (kavach.Variation.LeftWhole): a script it
// cannot read, whose call sites get no variants. It is pure.
func LeftWhole(events []kavach.Event, f int, opts Options) []string {
	steps := kavach.Steps(events, opts.Codec)
	if f < 1 || f > len(steps) || steps[f-1].Request.Flags&kavach.ParseError != 0 {
		return nil
	}
	leftWhole := after(opts.Variator, steps, f).LeftWhole
	if leftWhole == nil {
		return nil
	}
	return leftWhole(steps[f-1].Request.Data)
}

// SkippedSiblings are the members of the failing request's (step f's)
// family that the build, as opts.Schema knows it, does not have
// (kavach.Variation.Siblings). It is pure.
func SkippedSiblings(events []kavach.Event, f int, opts Options) []string {
	steps := kavach.Steps(events, opts.Codec)
	if f < 1 || f > len(steps) || steps[f-1].Request.Flags&kavach.ParseError != 0 {
		return nil
	}
	siblings := after(opts.Variator, steps, f).Siblings
	if siblings == nil {
		return nil
	}
	_, skipped := siblings(steps[f-1].Request.Data, opts.Schema)
	return skipped
}
