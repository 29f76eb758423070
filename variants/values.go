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
