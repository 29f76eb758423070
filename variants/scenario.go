package variants

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kavach-dev/kavach"
)

// A sibling's scenario (docs/variants.md, "Siblings with their
// scenario"): a sibling of the failing request made on a key of its own
// type (LRANGE's ZRANGE, BLPOP's BZPOPMIN) is given what made the failing
// request fail, translated to its type: the recorded key's earlier
// writers written into the sibling's key instead of the type's default
// content, the requests of other connections that woke the failing
// request (it blocked) pushing into the sibling's key, and the recorded
// timeout. Without it the sibling is a request alone, which the old
// build seldom fails and which then proves nothing.
type scenario struct {
	sub  kavach.Substitution // the sibling, its Setup the translated writers, What its description
	wake map[int][]byte      // waker step -> its request, translated
}

// scenario carries the failing request's scenario over to sub, a
// sibling on another key (sub.Moved); ok false when sub is not one, the
// steps' keys or writes are unknown, a writer or waker of the key cannot
// be translated (Variation.Translate), or there is nothing to carry.
func (g *gen) scenario(sub kavach.Substitution) (scenario, bool) {
	m, tr := sub.Moved, g.opts.Variator.Translate
	if m == nil || tr == nil || g.opts.Keys == nil || m.Writes > len(sub.Setup) {
		return scenario{}, false
	}
	writesKey := func(j int) bool {
		w, known := g.writesOf(j)
		return known && slices.Contains(w, m.From)
	}
	var setup [][]byte
	var written []string
	for j := 1; j < g.failing; j++ {
		if !writesKey(j) {
			continue
		}
		out, ok := tr(g.steps[j-1].Request.Data, m.From, m.To, m.Type)
		if !ok {
			return scenario{}, false
		}
		setup = append(setup, out)
		written = append(written, fmt.Sprintf("step %d", j))
	}
	wake := map[int][]byte{}
	var woken []string
	for _, j := range g.wakers() {
		if !writesKey(j) {
			continue
		}
		out, ok := tr(g.steps[j-1].Request.Data, m.From, m.To, m.Type)
		if !ok {
			return scenario{}, false
		}
		wake[j] = out
		woken = append(woken, fmt.Sprintf("step %d", j))
	}
	if len(setup) == 0 && len(wake) == 0 {
		return scenario{}, false
	}
	out := sub
	out.Setup = append(setup, sub.Setup[m.Writes:]...)
	out.Moved = nil
	var parts []string
	if len(written) > 0 {
		parts = append(parts, fmt.Sprintf("%s written as %s", strings.Join(written, ", "), m.Type))
	}
	if len(wake) > 0 {
		parts = append(parts, fmt.Sprintf("woken by %s as %s", strings.Join(woken, ", "), m.Type))
		if to, ok := g.recordedTimeout(out.Request); ok {
			out.Request = to
			parts = append(parts, "the recorded timeout")
		}
	}
	out.What = fmt.Sprintf("%s: %s; its scenario: %s", m.What, g.opts.Codec.DescribeRequest(out.Request, 80), strings.Join(parts, ", "))
	return scenario{sub: out, wake: wake}, true
}

// recordedTimeout is request (a blocking sibling) with the failing
// request's recorded timeout; ok false when either has none.
func (g *gen) recordedTimeout(request []byte) ([]byte, bool) {
	freq, _, ffields, ok := g.fieldsOf(g.failing)
	if !ok {
		return nil, false
	}
	_, ft := g.blockingFields(freq.Data, ffields)
	_, fields, ok := g.opts.Variator.Fields(request, g.opts.Schema)
	if !ok || ft < 0 {
		return nil, false
	}
	_, t := g.blockingFields(request, fields)
	if t < 0 {
		return nil, false
	}
	fields[t].Value = ffields[ft].Value
	return g.opts.Variator.Rebuild(request, fields), true
}

// withScenario is the incident with the failing request replaced by the
// sibling of sc and its wakers' requests by their translations.
func (g *gen) withScenario(sc scenario, what string) Variant {
	h := sha256.New()
	k := g.subKey(g.failing, false, sc.sub)
	h.Write(k[:])
	for _, j := range slices.Sorted(maps.Keys(sc.wake)) {
		fmt.Fprintf(h, "|%d|%q", j, sc.wake[j])
	}
	v := Variant{Description: what}
	h.Sum(v.key[:0])
	v.build = func() ([]kavach.Event, []int) {
		events := g.events
		if len(sc.wake) > 0 {
			events = slices.Clone(g.events)
			for j, req := range sc.wake {
				i := g.span[j][0]
				events[i].Data, events[i].Flags = req, events[i].Flags&^kavach.Redacted
			}
		}
		w := g.substitutedIn(events, g.failing, sc.sub)
		return w.Events, w.Origin
	}
	return v
}
