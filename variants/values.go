package variants

import "github.com/kavach-dev/kavach"

// values are step n's request with one value varied inside its argument
// (numbers in other forms, parts of structured values, its script), as
// far as the Variator knows them (kavach.ValueVariator). Each has its
// kind; the variants of one part of the request (Group) share their turns
// when the budget is sampled.
func (g *gen) values(n int) []substitution {
	vv, ok := after(g.opts.Variator, g.steps, n).(kavach.ValueVariator)
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

// after is the Variator for step n's request: v told the requests of
// the steps before it (kavach.EarlierVariator: an EVALSHA's script is in
// an earlier SCRIPT LOAD), or v itself when it does not ask for them.
func after(v kavach.Variator, steps []kavach.Step, n int) kavach.Variator {
	ev, ok := v.(kavach.EarlierVariator)
	if !ok || n < 1 {
		return v
	}
	earlier := make([][]byte, 0, n-1)
	for _, s := range steps[:min(n-1, len(steps))] {
		if s.Request.Flags&kavach.ParseError == 0 {
			earlier = append(earlier, s.Request.Data)
		}
	}
	return ev.After(earlier)
}

// LeftWhole says what the Variator left whole in the failing request
// (step f) and why, as far as it says (kavach.ValueNoter): a script it
// cannot read, whose call sites get no variants. It is pure.
func LeftWhole(events []kavach.Event, f int, opts Options) []string {
	steps := kavach.Steps(events, opts.Codec)
	if f < 1 || f > len(steps) || steps[f-1].Request.Flags&kavach.ParseError != 0 {
		return nil
	}
	vn, ok := after(opts.Variator, steps, f).(kavach.ValueNoter)
	if !ok {
		return nil
	}
	return vn.LeftWhole(steps[f-1].Request.Data)
}

// SkippedSiblings are the members of the failing request's (step f's)
// family that the build, as opts.Schema knows it, does not have
// (kavach.SiblingVariator). It is pure.
func SkippedSiblings(events []kavach.Event, f int, opts Options) []string {
	steps := kavach.Steps(events, opts.Codec)
	if f < 1 || f > len(steps) || steps[f-1].Request.Flags&kavach.ParseError != 0 {
		return nil
	}
	sv, ok := after(opts.Variator, steps, f).(kavach.SiblingVariator)
	if !ok {
		return nil
	}
	_, skipped := sv.Siblings(steps[f-1].Request.Data, opts.Schema)
	return skipped
}
