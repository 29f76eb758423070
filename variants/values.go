package variants

import "github.com/kavach-dev/kavach"

// values are step n's request with one value varied inside its argument
// (numbers in other forms, parts of structured values), as far as the
// Variator knows them (kavach.ValueVariator). Each has its kind; the
// variants of one part of the request (Group) share their turns when the
// budget is sampled.
func (g *gen) values(n int) []substitution {
	vv, ok := g.opts.Variator.(kavach.ValueVariator)
	if !ok {
		return nil
	}
	req := g.steps[n-1].Request
	at := g.opts.Start
	if !at.IsZero() {
		at = at.Add(req.Offset)
	}
	var out []substitution
	for _, s := range vv.Values(req.Data, g.opts.Schema, at) {
		if s.Kind == "" {
			continue
		}
		out = append(out, substitution{s, s.Kind})
	}
	return out
}

// LeftWhole says what the Variator left whole in the failing request
// (step f) and why, as far as it says (kavach.ValueNoter): a script it
// cannot read, whose call sites get no variants. It is pure.
func LeftWhole(events []kavach.Event, f int, opts Options) []string {
	vn, ok := opts.Variator.(kavach.ValueNoter)
	if !ok {
		return nil
	}
	steps := kavach.Steps(events, opts.Codec)
	if f < 1 || f > len(steps) || steps[f-1].Request.Flags&kavach.ParseError != 0 {
		return nil
	}
	return vn.LeftWhole(steps[f-1].Request.Data)
}
