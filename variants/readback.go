package variants

import (
	"fmt"

	"github.com/kavach-dev/kavach"
)

// readBacks are the regression variants of the earlier writes whose key
// a later step names (reads back) before the failing step: the write's
// numbers in other forms (fractions, exponents, negative zero, the
// largest and smallest magnitudes; kavach.ValueVariator's "number-form"),
// the recording cut before the failure. The old build must handle them
// and the new build read back what the old build reads back: a fix that
// changes how a stored number is written (10.1 read back as
// 10.099999999999999) answers otherwise at the read. Kind "read-back"
// (docs/variants.md, "Read back"). Which steps write and read is
// inferred from the keys each names (Options.Keys) and, when the codec
// says, the keys it writes (kavach.Inspector); a step whose keys are
// unknown is neither.
func (g *gen) readBacks(out []Variant, cut int) []Variant {
	var steps []int
	readAt := map[int]int{}
	for j := 1; j < g.F && j <= len(g.steps); j++ {
		if k := g.readBack(j); k > 0 {
			steps = append(steps, j)
			readAt[j] = k
		}
	}
	for _, j := range g.pick(steps) {
		for _, sub := range g.values(j) {
			if sub.kind != "number-form" {
				continue
			}
			v := g.substituted(j, sub.Substitution, fmt.Sprintf("read-back: step %d: %s, read back at step %d", j, sub.What, readAt[j]), true)
			v.group, v.Kind, v.Place = fmt.Sprintf("step %d read-back", j), "read-back", PlaceRegression
			v.build = cut1(v.build, cut+len(sub.Setup), g.F-1+len(sub.Setup))
			out = g.add(out, v)
		}
	}
	return out
}

// readBack is the first step after step j, and before the failing one,
// that names a key step j writes; 0 for none, or when the keys are
// unknown.
func (g *gen) readBack(j int) int {
	keysOf := func(n int) []string {
		if n-1 < len(g.opts.Keys) {
			return g.opts.Keys[n-1]
		}
		return nil
	}
	written := keysOf(j)
	if ins, ok := g.opts.Codec.(kavach.Inspector); ok && len(written) > 0 && g.steps[j-1].Request.Flags&kavach.ParseError == 0 {
		w, _ := ins.Writes(g.steps[j-1].Request.Data)
		written = w
	}
	if len(written) == 0 {
		return 0
	}
	for k := j + 1; k < g.F && k <= len(g.steps); k++ {
		if anyRelate(keysOf(k), written) {
			return k
		}
	}
	return 0
}
