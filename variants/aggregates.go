package variants

import "fmt"

// readsAggregate reports whether the failing request reads an aggregate,
// as the Variation says (Variation.ReadsAggregate); false without it.
func (g *gen) readsAggregate() bool {
	reads := g.opts.Variator.ReadsAggregate
	return reads != nil && g.failing <= len(g.steps) && reads(g.steps[g.failing-1].Request.Data)
}

// feeders places the earlier steps of a failing request that reads an
// aggregate: every one is a writer, since any may have fed what it reads
// (docs/variants.md, "Aggregates"); the steps the keys alone would leave
// out (they name only keys the failing request does not) are returned,
// in order, and stay out of place: their variants are made by
// aggregates, of kind "aggregate". place is changed in place. None when
// the failing request reads no aggregate.
func (g *gen) feeders(place map[int]string) []int {
	if !g.readsAggregate() {
		return nil
	}
	var fed []int
	for j := 1; j < g.failing && j <= len(g.steps); j++ {
		if place[j] == "" {
			fed = append(fed, j) // left out of affecting: varied by aggregates
		} else {
			place[j] = PlaceWriter
		}
	}
	return fed
}

// aggregates are the variants of the steps that reach the budget only
// because the failing request reads an aggregate (feeders): each one's
// fields changed or removed, the step dropped or delivered twice, the
// failing request moved before it, the failing step kept; and its
// regression variants, cut before the failure. All of kind "aggregate";
// those of the incident are placed with the writers.
func (g *gen) aggregates() (incident, regression []Variant) {
	picked := g.pick(g.fed)
	cut := g.span[g.failing][0]
	for _, j := range picked {
		for _, m := range g.fieldMutations(j, false) {
			v := g.mutated(j, m, "step %d (before the failure, feeding the aggregate it reads): %s", false)
			v.group, v.Kind, v.Place, v.cause = "aggregate "+m.group, "aggregate", PlaceWriter, j
			incident = g.add(incident, v)
		}
		d := g.lazily(fmt.Sprintf("aggregate|dropped|%d", j), func() string {
			return fmt.Sprintf("step %d (%s), feeding the aggregate step %d reads, dropped", j, g.describe(j), g.failing)
		}, func() Variant { return g.dropped(j) })
		t := g.lazily(fmt.Sprintf("aggregate|twice|%d", j), func() string {
			return fmt.Sprintf("step %d (%s), feeding the aggregate step %d reads, delivered twice", j, g.describe(j), g.failing)
		}, func() Variant { return g.twice(j) })
		mv := g.lazily(fmt.Sprintf("aggregate|moved|%d", j), func() string {
			return fmt.Sprintf("step %d (%s) moved before step %d, which feeds the aggregate it reads", g.failing, g.describe(g.failing), j)
		}, func() Variant { return g.moved(j) })
		d.group, t.group, mv.group = "aggregate dropped", "aggregate twice", "aggregate moved"
		for _, v := range []Variant{d, t, mv} {
			v.Kind, v.Place, v.cause = "aggregate", PlaceWriter, j
			incident = g.add(incident, v)
		}
		for _, m := range g.fieldMutations(j, false) {
			v := g.mutated(j, m, "regression: step %d (feeding an aggregate): %s", true)
			v.group, v.Kind, v.Place = fmt.Sprintf("aggregate regression step %d %s", j, m.group), "aggregate", PlaceRegression
			v.build = cutBefore(v.build, cut, g.failing-1)
			regression = g.add(regression, v)
		}
	}
	return incident, regression
}

// reaching adds to the incident's variants and the regression variants
// those that carry the failure across connections (wakeups) and to the
// requests that fed an aggregate (aggregates), numbered on in the order
// made.
func (g *gen) reaching(incident, regression []Variant) ([]Variant, []Variant) {
	inc, reg := g.aggregates()
	n := len(incident)
	// Appended, not concatenated: with none to add (most incidents),
	// the incident's variants are not copied.
	incident = append(append(incident, inc...), g.wakeups()...)
	for i := n; i < len(incident); i++ {
		incident[i].order = i
	}
	return incident, append(regression, reg...)
}
