package variants

import (
	"fmt"
	"slices"

	"github.com/kavach-dev/kavach"
)

// writerValues are the incident's variants that vary the values of the
// earlier steps writing a key the failing request names (PlaceWriter),
// and of the scripts that name one (a script's writes are unknown to
// the codec: it is placed with the others, PlaceOther): each value kind
// the failing request gets (number forms, structured values) and its
// script kinds (script sites, runners), put on the writer instead, the
// failing step kept. The failure may live in what was stored (a
// stream's entries written with a gap between their ids that a range
// then walks), which the failing request's own arguments never reach.
// Kind "writer-value", kept like every variant of the incident: when
// the old build then fails at the failing step (docs/variants.md, "On
// the writers").
func (g *gen) writerValues(out []Variant, affecting []int) []Variant {
	for _, j := range affecting {
		what := "writes the failing request's key"
		if g.place[j] != PlaceWriter {
			if !g.scriptOnKey(j) {
				continue
			}
			what = "a script naming the failing request's key"
		}
		for _, sub := range g.valuesOf(j) {
			v := g.substituted(j, sub.Substitution, fmt.Sprintf("step %d (%s): %s, %s", j, what, sub.kind, sub.What), false)
			v.group, v.Kind, v.Place, v.cause = fmt.Sprintf("step %d writer-value %s", j, sub.kind), "writer-value", g.place[j], j
			field := -1
			if sub.Edit != nil {
				field = sub.Edit.Field
			}
			v.alt = fmt.Sprintf("%s|%d|%s", v.group, field, sub.Part)
			out = g.add(out, v)
		}
		if g.place[j] == PlaceWriter {
			out = g.writerSiblings(out, j)
		}
	}
	return out
}

// maxAlternates is how many values of a writer's part the grader tries
// after the kept one is refused: a stream id's ms part goes from 2^64-1
// through 0, 2^64 and 2^63 to 2^63-1, the largest a build that reads it
// as a signed number stores.
const maxAlternates = 6

// withAlternates gives each kept writer-value variant of out the next
// variants of its part among all (in the order made, not kept
// themselves), finished: Variant.Alternates.
func (g *gen) withAlternates(out, all []Variant) {
	kept := map[[32]byte]bool{}
	for _, v := range out {
		kept[v.key] = true
	}
	at := map[[32]byte]int{}
	for i, v := range all {
		if v.alt != "" {
			at[v.key] = i
		}
	}
	for i := range out {
		v := &out[i]
		from, ok := at[v.key]
		if v.alt == "" || !ok {
			continue
		}
		for _, a := range all[from+1:] {
			if len(v.Alternates) == maxAlternates || a.cause != v.cause {
				break // a writer's variants are made together: past them, none is
			}
			if a.alt == v.alt && !kept[a.key] {
				a.K = v.K
				g.finish(&a)
				v.Alternates = append(v.Alternates, a)
			}
		}
	}
}

// writerSiblings are the incident's variants that make writer j by the
// other commands of its family (HINCRBYFLOAT for HINCRBY), the failing
// step kept: a fix that mends only the command that wrote what the
// failing read sees leaves its siblings writing it wrong. Kind
// "sibling", place writer. Only siblings that still write the recorded
// key: one on another type writes a key of its own (kavach:sibling:TYPE),
// which the failing request never reads.
func (g *gen) writerSiblings(out []Variant, j int) []Variant {
	siblings := after(g.opts.Variator, g.steps, j).Siblings
	if siblings == nil || j-1 >= len(g.opts.Keys) {
		return out
	}
	subs, _ := siblings(g.steps[j-1].Request.Data, g.opts.Schema)
	for _, sub := range subs {
		if !g.namesKeyOf(sub.Request, j) {
			continue
		}
		v := g.substituted(j, sub, fmt.Sprintf("step %d (writes the failing request's key): sibling, %s", j, sub.What), false)
		v.group, v.Kind, v.Place, v.cause = fmt.Sprintf("step %d sibling", j), "sibling", PlaceWriter, j
		out = g.add(out, v)
	}
	return out
}

// namesKeyOf reports whether request names, as a key field, one of the
// keys step j names (Options.Keys).
func (g *gen) namesKeyOf(request []byte, j int) bool {
	_, fields, ok := g.opts.Variator.Fields(request, g.opts.Schema)
	if !ok {
		return false
	}
	for _, f := range fields {
		if f.Type == kavach.FieldKey && slices.Contains(g.opts.Keys[j-1], f.Value) {
			return true
		}
	}
	return false
}

// scriptOnKey reports whether earlier step j is a script (its value
// variants include script sites or runners) that names a key the failing
// request names (Options.Keys).
func (g *gen) scriptOnKey(j int) bool {
	if g.place[j] != PlaceOther || j-1 >= len(g.opts.Keys) || g.failing-1 >= len(g.opts.Keys) || !anyRelate(g.opts.Keys[j-1], g.opts.Keys[g.failing-1]) {
		return false
	}
	return slices.ContainsFunc(g.valuesOf(j), func(s substitution) bool { return s.kind == "script-site" || s.kind == "runner" })
}

// valuesOf are step j's value variants (values), made once for the
// writers' variants and the read-back ones.
func (g *gen) valuesOf(j int) []substitution {
	if subs, ok := g.stepValues[j]; ok {
		return subs
	}
	if g.stepValues == nil {
		g.stepValues = map[int][]substitution{}
	}
	g.stepValues[j] = g.values(j)
	return g.stepValues[j]
}
