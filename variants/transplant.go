package variants

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"github.com/kavach-dev/kavach"
)

// maxTriggers is how many values of the failing request are
// transplanted at most (its first ones), and maxTargetFields how many
// fields of another request take them (its first ones): a request of
// half a million arguments is still transplanted in bounded time.
const (
	maxTriggers     = 16
	maxTargetFields = 256
)

// maxTrigger is the longest value of the failing request that is
// transplanted; a value with white space is not either: a script's text
// or a document is the request's body, not a trigger one argument of
// another request could carry.
const maxTrigger = 64

// trigger is one value of the failing request transplanted into other
// requests: its field and the field's place class (fieldClass).
type trigger struct {
	i     int
	field kavach.Field
	class string
}

// fieldClass is the kind of place a field is in: "" for a positional
// argument (Redis), else the part of its key before the first dot (HTTP:
// "query", "body", "header", "path"). A value goes only to fields of its
// own type in places of its own class: a query parameter's to query
// parameters, a JSON field's to JSON fields.
func fieldClass(f kavach.Field) string {
	if f.Key == "" {
		return ""
	}
	c, _, _ := strings.Cut(f.Key, ".")
	return c
}

// transplants are the failing request's trigger put into other recorded
// requests, before and after the failing step: each value of the failing
// request (a number, or a short string; not a key, not a token) that no
// other request of the recording carries in a field of its type and
// place, set in turn into every field of that type and place of the
// nearest other requests (at most the budget's number of steps, the
// nearest first, each side alike). A transplant reproduces when the old
// build fails the recorded way at the request it went into (FailsAt);
// the new build must not.
func (g *gen) transplants() []Variant {
	if g.failing < 1 || g.failing > len(g.steps) {
		return nil
	}
	_, _, fields, ok := g.fieldsOf(g.failing)
	if !ok {
		return nil
	}
	keysOf := func(n int) []string {
		if n-1 < len(g.opts.Keys) {
			return g.opts.Keys[n-1]
		}
		return nil
	}
	var triggers []trigger
	for i, f := range fields {
		// A key is no trigger (the key variants vary it), even where the
		// Variator types it as text (an EVAL's keys, after numkeys).
		if (f.Type == kavach.FieldNumber || f.Type == kavach.FieldString) && f.Value != "" && len(f.Value) <= maxTrigger && !strings.ContainsAny(f.Value, " \t\r\n") && !slices.Contains(keysOf(g.failing), f.Value) {
			triggers = append(triggers, trigger{i, f, fieldClass(f)})
		}
	}
	if len(triggers) == 0 {
		return nil
	}
	triggers = triggers[:min(len(triggers), maxTriggers)]
	// The other steps, nearest first, split once; at most the budget's
	// number of them take a transplant, and at most eight times that are
	// split: generation stays bounded on a long recording.
	type target struct {
		n      int
		fields []kavach.Field
	}
	var targets []target
	scanned := 0
	for d := 1; len(targets) < g.opts.Budget && scanned < 8*g.opts.Budget && (g.failing-d >= 1 || g.failing+d <= len(g.steps)); d++ {
		for _, n := range []int{g.failing - d, g.failing + d} {
			if n < 1 || n > len(g.steps) || len(targets) >= g.opts.Budget {
				continue
			}
			scanned++
			r := g.steps[n-1].Request
			if r.Flags&kavach.ParseError != 0 {
				continue
			}
			if _, f, ok := g.opts.Variator.Fields(r.Data, g.opts.Schema); ok {
				targets = append(targets, target{n, f[:min(len(f), maxTargetFields)]})
			}
		}
	}
	// A value another request carries in a field of its type and place
	// is no trigger: the recording shows it passing there.
	type carried struct {
		typ          kavach.FieldType
		class, value string
	}
	seen := map[carried]bool{}
	for _, tg := range targets {
		for _, f := range tg.fields {
			seen[carried{f.Type, fieldClass(f), f.Value}] = true
		}
	}
	triggers = slices.DeleteFunc(triggers, func(t trigger) bool { return seen[carried{t.field.Type, t.class, t.field.Value}] })
	// Fields of the trigger's own name (an argument of the same role, a
	// query parameter of the same name; unnamed with unnamed) first, the
	// nearest steps first; then fields of other names.
	var out []Variant
	for _, sameName := range []bool{true, false} {
		for _, tg := range targets {
			keys := keysOf(tg.n)
			for _, t := range triggers {
				for j, f := range tg.fields {
					if f.Type != t.field.Type || fieldClass(f) != t.class || f.Value == t.field.Value ||
						(f.Name == t.field.Name) != sameName || slices.Contains(keys, f.Value) {
						continue
					}
					if len(out) >= g.opts.Budget {
						return out // more than the budget could ever keep of one group
					}
					v := g.transplanted(tg.n, tg.fields, j, t)
					if !sameName {
						v.group = "transplant to other fields"
					}
					out = append(out, v)
				}
				if sameName && t.field.Type == kavach.FieldNumber {
					out = append(out, g.siteTransplants(tg.n, t)...)
				}
			}
		}
	}
	return out[:min(len(out), g.opts.Budget)]
}

// siteTransplants are trigger t put in place of each number the call
// sites of the script step n runs pass (Variation.SiteTransplants).
func (g *gen) siteTransplants(n int, t trigger) []Variant {
	transplants := after(g.opts.Variator, g.steps, n).SiteTransplants
	if transplants == nil {
		return nil
	}
	var out []Variant
	for _, sub := range transplants(g.steps[n-1].Request.Data, t.field.Value) {
		where := "before"
		if n > g.failing {
			where = "after"
		}
		v := g.substituted(n, sub, fmt.Sprintf("step %d (%s the failure): %s, step %d's %s carried over", n, where, sub.What, g.failing, g.fieldName(t.i, t.field)), false)
		v.Kind, v.Place, v.FailsAt, v.group, v.cause = "transplant", g.placeOf(n), n, "transplant", n
		out = append(out, v)
	}
	return out
}

// placeOf is the budget's place of a transplant into step n: the place
// of the request it changes (an earlier writer of the failing request's
// keys, or another earlier request); a later request, or one that cannot
// affect the failing step, is other.
func (g *gen) placeOf(n int) string {
	if n < g.failing && g.place[n] != "" {
		return g.place[n]
	}
	return PlaceOther
}

// transplanted is the incident with field j of step n's request (fields)
// set to trigger t's value, made lazily.
func (g *gen) transplanted(n int, fields []kavach.Field, j int, t trigger) Variant {
	where := "before"
	if n > g.failing {
		where = "after"
	}
	// The key of the earlier step's mutation that makes the same request
	// (mutated): the two are one variant, made as that mutation.
	key := sha256.Sum256(fmt.Appendf(nil, "lazy|%d|false|%d=%s", n, j, t.field.Value))
	v := Variant{key: key, Kind: "transplant", Place: g.placeOf(n), FailsAt: n, group: "transplant", cause: n}
	v.describe = func() string {
		return fmt.Sprintf("step %d (%s the failure): %s %s → %s, step %d's %s carried over",
			n, where, g.fieldName(j, fields[j]), quote(fields[j].Value), quote(t.field.Value), g.failing, g.fieldName(t.i, t.field))
	}
	v.build = func() ([]kavach.Event, []int) {
		f := slices.Clone(fields)
		f[j].Value = t.field.Value
		events := slices.Clone(g.events)
		i := g.span[n][0]
		events[i].Data = g.opts.Variator.Rebuild(g.steps[n-1].Request.Data, f)
		events[i].Flags &^= kavach.Redacted
		w := g.variant(events, "", false)
		return w.Events, w.Origin
	}
	return v
}

// typedSiblings are the failing request made by commands of other
// families whose argument in the same role has its type
// (Variation.TypedSiblings), each with the writes it needs inserted before
// it.
func (g *gen) typedSiblings() []Variant {
	req := g.steps[g.failing-1].Request
	if req.Flags&kavach.ParseError != 0 {
		return nil
	}
	typed := after(g.opts.Variator, g.steps, g.failing).TypedSiblings
	if typed == nil {
		return nil
	}
	var out []Variant
	for _, s := range typed(req.Data, g.opts.Schema) {
		v := g.substituted(g.failing, s, fmt.Sprintf("step %d: %s", g.failing, s.What), false)
		v.group, v.primary, v.Kind, v.Place = "typed-sibling "+s.Group, true, "typed-sibling", PlaceFailing
		out = append(out, v)
	}
	return out
}
