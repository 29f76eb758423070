package variants

import (
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/kavach-dev/kavach"
)

type substitution struct {
	kavach.Substitution
	kind string // "type", "grammar" or "sibling"
}

// lazily is a variant built and described only when it is kept: key
// tells it from the others, what describes it, make builds it.
func (g *gen) lazily(key string, what func() string, make func() Variant) Variant {
	return Variant{describe: what, key: sha256.Sum256([]byte(key)), build: func() ([]kavach.Event, []int) {
		w := make()
		return w.Events, w.Origin
	}}
}

// cutBefore makes build stop its variant's events before index events
// and its origin after steps steps: a regression variant ends where the
// failing request was.
func cutBefore(build func() ([]kavach.Event, []int), events, steps int) func() ([]kavach.Event, []int) {
	return func() ([]kavach.Event, []int) {
		e, o := build()
		return e[:events], o[:min(len(o), steps)]
	}
}

// lazyKey tells a variant that replaces step n's request (after inserting
// setup) from every other such variant; a regression variant is cut.
func lazyKey(n int, regression bool, setup [][]byte, request []byte) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d|%v|%d|", n, regression, len(setup))
	for _, s := range setup {
		fmt.Fprintf(h, "%d|", len(s))
		h.Write(s)
	}
	h.Write(request)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// substitutions are step n's request on keys of every type the service
// has, then with the other choices its grammar allows; for the failing
// request (failing), then also made by the other commands of its family
// and with its values and scripts varied; as far as the Variator knows
// them.
func (g *gen) substitutions(n int, failing bool) []substitution {
	req := g.steps[n-1].Request
	if req.Flags&kavach.ParseError != 0 {
		return nil
	}
	var out []substitution
	if types := g.opts.Variator.Types; types != nil {
		for _, s := range types(req.Data, g.opts.Schema) {
			out = append(out, substitution{s, "type"})
		}
	}
	if grammar := g.opts.Variator.Grammar; grammar != nil {
		for _, s := range grammar(req.Data, g.opts.Schema) {
			out = append(out, substitution{s, "grammar"})
		}
	}
	if !failing {
		return out
	}
	if siblings := after(g.opts.Variator, g.steps, n).Siblings; siblings != nil {
		subs, _ := siblings(req.Data, g.opts.Schema)
		for _, s := range subs {
			out = append(out, substitution{s, "sibling"})
		}
	}
	return append(out, g.values(n)...)
}

// substituted is the incident with step n's request replaced by sub's,
// and sub's writes inserted right before it on its connection, at its
// time. The writes are new inputs: no origin.
func (g *gen) substituted(n int, sub kavach.Substitution, what string, regression bool) Variant {
	v := Variant{Description: what, Regression: regression, key: g.subKey(n, regression, sub)}
	v.build = func() ([]kavach.Event, []int) {
		w := g.substitutedNow(n, sub)
		return w.Events, w.Origin
	}
	return v
}

func (g *gen) substitutedNow(n int, sub kavach.Substitution) Variant {
	return g.substitutedIn(g.events, n, sub)
}

// substitutedIn is substitutedNow on events, the recording's events with
// some requests replaced (scenario).
func (g *gen) substitutedIn(from []kavach.Event, n int, sub kavach.Substitution) Variant {
	i := g.span[n][0]
	req := from[i]
	events := make([]kavach.Event, 0, len(from)+len(sub.Setup))
	events = append(events, from[:i]...)
	for _, w := range sub.Setup {
		events = append(events, kavach.Event{Conn: req.Conn, Dir: kavach.Request, Flags: kavach.Inserted, Offset: req.Offset, Data: w})
	}
	req.Data, req.Flags = g.subRequest(n, sub), req.Flags&^kavach.Redacted
	events = append(events, req)
	events = append(events, from[i+1:]...)
	return g.variant(events, "", false)
}

// seenType is a named field's type as one request of the recording
// shows it, with its value there.
type seenType struct {
	typ   kavach.FieldType
	value string
	step  int
}

// typedAs are the types a named field of requests of kind has in the
// recording, the first request showing each; the recording's requests
// are split once, when first needed.
func (g *gen) typedAs(kind, key string) []seenType {
	if g.types == nil {
		g.types = map[string][]seenType{}
		for _, s := range g.steps {
			if s.Request.Flags&kavach.ParseError != 0 {
				continue
			}
			k, fields, ok := g.opts.Variator.Fields(s.Request.Data, g.opts.Schema)
			if !ok {
				continue
			}
			for _, f := range fields {
				if f.Key == "" || (f.Type != kavach.FieldNumber && f.Type != kavach.FieldString) {
					continue
				}
				id := k + "\x00" + f.Key
				if !slices.ContainsFunc(g.types[id], func(t seenType) bool { return t.typ == f.Type }) {
					g.types[id] = append(g.types[id], seenType{f.Type, f.Value, s.N})
				}
			}
		}
	}
	return g.types[kind+"\x00"+key]
}
