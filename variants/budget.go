package variants

import (
	"math/rand/v2"
	"slices"

	"github.com/kavach-dev/kavach"
)

// DefaultBudget is the budget when Options.Budget is zero, and the floor
// of a budget that grows (Options.Cap).
const DefaultBudget = 64

// DefaultCap is the most a budget that grows reaches unless told: twice
// the floor, so that a diff of a recording of a few dozen steps takes at
// most twice the time it took with the floor alone (docs/variants.md).
const DefaultCap = 2 * DefaultBudget

// CapFor is the Cap of a diff whose budget is budget: only the default
// budget grows (to DefaultCap); any other budget was asked for and is
// kept exactly.
func CapFor(budget int) int {
	if budget == DefaultBudget {
		return DefaultCap
	}
	return 0
}

// Generate makes up to the budget's variants of the incident whose
// failure is at step failing (docs/variants.md, "Every kind before any
// twice"). First one variant of every kind, on the failing request where
// the kind has one there; then one of every kind on every cause (the
// failing request and each earlier step that writes a key it names);
// then the rest of the budget as before: variants of the incident itself
// (at most three quarters of the budget when regression variants could
// fill the rest), then regression variants, each place and each kind of
// mutation getting its first before any gets a second, the last round
// sampled with Seed. The kept ones stay in the order they were made.
// Duplicates are removed. With Options.Upgrade, the upgrade variant
// comes last, on top of the budget. A failing step that is not one of the
// events' steps has no variants.
func Generate(events []kavach.Event, failing int, opts Options) []Variant {
	vs, _ := Counted(events, failing, opts)
	return vs
}

// Counted is Generate, and how many variants of each kind could be made
// before the budget kept some (kinds excluded by opts.Exclude included):
// what is applicable to this incident, kind by kind.
func Counted(events []kavach.Event, failing int, opts Options) ([]Variant, map[string]int) {
	if failing < 1 || failing > len(kavach.Steps(events, opts.Codec)) {
		return nil, nil
	}
	floor := floorOf(opts.Budget)
	// Generation makes as many candidates as the largest budget keeps.
	opts.Budget = max(floor, opts.Cap)
	g := newGen(events, failing, opts)
	incident, regression := g.reaching(g.incident(), g.regression())
	applicable := countKinds(incident, regression)
	excluded := func(v Variant) bool { return slices.Contains(opts.Exclude, v.Kind) }
	incident, regression = slices.DeleteFunc(incident, excluded), slices.DeleteFunc(regression, excluded)
	for i := range regression {
		regression[i].order = i
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6b61766163680000))
	all := slices.Concat(incident, regression)
	rounds := firstRounds(all, failing, rng)
	budget := grown(floor, opts.Cap, rounds)
	keep := make([]bool, len(all))
	forced := keepRounds(keep, rounds, budget, rng)
	var restInc, restReg []Variant
	forcedInc := 0
	for i, v := range all {
		switch {
		case keep[i] && i < len(incident):
			forcedInc++
		case keep[i]:
		case i < len(incident):
			restInc = append(restInc, v)
		default:
			restReg = append(restReg, v)
		}
	}
	// The incident's share of the whole budget, as before the first
	// rounds; what they kept of it counts.
	nInc := min(len(incident), budget)
	if len(regression) > 0 && nInc > budget*3/4 {
		nInc = max(budget*3/4, budget-len(regression))
	}
	left := budget - forced
	incLeft := min(len(restInc), max(0, nInc-forcedInc), left)
	regLeft := min(len(restReg), left-incLeft)
	incLeft = min(len(restInc), left-regLeft)
	chosen := slices.Concat(kept(all[:len(incident)], keep), byPlace(restInc, incLeft, rng))
	slices.SortStableFunc(chosen, func(a, b Variant) int { return a.order - b.order })
	out := slices.Concat(chosen, inOrder(kept(all[len(incident):], keep[len(incident):]), sample(restReg, regLeft, rng)))
	// The upgrade variant comes on top of the budget, last: one per
	// incident, and the others' choice stays what it was without it.
	if v, ok := g.upgrade(); ok {
		applicable[v.Kind] = 1
		if !excluded(v) {
			out = append(out, v)
		}
	}
	for i := range out {
		out[i].K = i + 1
		g.finish(&out[i])
	}
	g.withAlternates(out, all)
	return out, applicable
}

// Regression makes the regression variants of a recording with no
// failure (a contract): every step's fields mutated in turn, the rest of
// the recording kept; at most the budget of them, one of every kind
// first, the rest sampled by opts.Seed as Generate samples, numbered
// from 1.
func Regression(events []kavach.Event, opts Options) []Variant {
	vs, _ := RegressionCounted(events, opts)
	return vs
}

// RegressionCounted is Regression, and how many of each kind could be
// made before the budget kept some (as Counted).
func RegressionCounted(events []kavach.Event, opts Options) ([]Variant, map[string]int) {
	floor := floorOf(opts.Budget)
	opts.Budget = max(floor, opts.Cap)
	g := newGen(events, len(kavach.Steps(events, opts.Codec))+1, opts)
	all := g.regression()
	applicable := countKinds(all)
	vs := slices.DeleteFunc(all, func(v Variant) bool { return slices.Contains(opts.Exclude, v.Kind) })
	for i := range vs {
		vs[i].order = i
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6b61766163680000))
	rounds := firstRounds(vs, 0, rng)
	budget := grown(floor, opts.Cap, rounds)
	keep := make([]bool, len(vs))
	forced := keepRounds(keep, rounds, budget, rng)
	var rest []Variant
	for i, v := range vs {
		if !keep[i] {
			rest = append(rest, v)
		}
	}
	out := inOrder(kept(vs, keep), sample(rest, budget-forced, rng))
	for i := range out {
		out[i].K = i + 1
		g.finish(&out[i]) // variants are built only once chosen (as Generate does)
	}
	return out, applicable
}

// floorOf is the budget asked for, DefaultBudget when none (zero or
// less).
func floorOf(budget int) int {
	if budget <= 0 {
		return DefaultBudget
	}
	return budget
}

// firstRounds are the budget's first two rounds, as indexes of vs: one
// variant of every kind (the failing request's when the kind has one
// there), then one of every kind on every cause not yet given one: the
// failing request (failing; 0 for a contract, which has none) and each
// earlier step that writes a key it names. Each pick is drawn by rng
// among the slot's variants that come first in their group; kinds and
// causes in the order first made.
func firstRounds(vs []Variant, failing int, rng *rand.Rand) [][]int {
	type slot struct {
		kind  string
		cause int
	}
	var kinds []string
	var slots []slot
	byKind := map[string][]int{}
	bySlot := map[slot][]int{}
	slotOf := make([]slot, len(vs))
	for i, v := range vs {
		if _, ok := byKind[v.Kind]; !ok {
			kinds = append(kinds, v.Kind)
		}
		byKind[v.Kind] = append(byKind[v.Kind], i)
		cause := 0
		switch {
		case v.Place == PlaceFailing && failing > 0:
			cause = failing
		case v.Place == PlaceWriter:
			cause = v.cause
		}
		if cause == 0 {
			continue
		}
		s := slot{v.Kind, cause}
		slotOf[i] = s
		if _, ok := bySlot[s]; !ok {
			slots = append(slots, s)
		}
		bySlot[s] = append(bySlot[s], i)
	}
	taken := map[slot]bool{}
	// Among a slot's variants, those first of their group (the first
	// made is each group's best: sample).
	firstOfGroup := make([]bool, len(vs))
	seen := map[string]bool{}
	for i, v := range vs {
		firstOfGroup[i] = !seen[v.Kind+"|"+v.group]
		seen[v.Kind+"|"+v.group] = true
	}
	pick := func(is []int) int {
		if heads := slices.DeleteFunc(slices.Clone(is), func(i int) bool { return !firstOfGroup[i] }); len(heads) > 0 {
			is = heads
		}
		if near := slices.DeleteFunc(slices.Clone(is), func(i int) bool { return !vs[i].affine }); len(near) > 0 {
			is = near
		}
		i := is[rng.IntN(len(is))]
		taken[slotOf[i]] = true
		return i
	}
	var first, second []int
	for _, k := range kinds {
		if on := bySlot[slot{k, failing}]; failing > 0 && len(on) > 0 {
			first = append(first, pick(on))
		} else {
			first = append(first, pick(byKind[k]))
		}
	}
	for _, s := range slots {
		if !taken[s] {
			second = append(second, pick(bySlot[s]))
		}
	}
	return [][]int{first, second}
}

// grown is the budget: floor, or, when cap is above it, floor and one
// more per slot of the first rounds, at most cap: the first rounds come
// on top of the shares the floor alone would make.
func grown(floor, cap int, rounds [][]int) int {
	if cap <= floor {
		return floor
	}
	slots := 0
	for _, r := range rounds {
		slots += len(r)
	}
	return min(cap, floor+slots)
}

// keepRounds marks the rounds' variants kept, round by round, within
// budget; the round that does not fit whole is sampled with rng. It
// returns how many it kept.
func keepRounds(keep []bool, rounds [][]int, budget int, rng *rand.Rand) int {
	n := 0
	for _, round := range rounds {
		round = slices.Clone(round)
		if len(round) > budget-n {
			rng.Shuffle(len(round), func(a, b int) { round[a], round[b] = round[b], round[a] })
			round = round[:budget-n]
		}
		for _, i := range round {
			if !keep[i] {
				keep[i] = true
				n++
			}
		}
	}
	return n
}

// kept are the variants of vs keep marks, in order.
func kept(vs []Variant, keep []bool) []Variant {
	var out []Variant
	for i, v := range vs {
		if keep[i] {
			out = append(out, v)
		}
	}
	return out
}

// inOrder is a and b, two disjoint lists of variants, in the order
// they were made.
func inOrder(a, b []Variant) []Variant {
	out := slices.Concat(a, b)
	slices.SortStableFunc(out, func(x, y Variant) int { return x.order - y.order })
	return out
}

// byPlace keeps n of the incident's variants vs: mutations of the
// failing request itself (and moves and clock jumps) first, up to two
// thirds; then the earlier requests that write a key it names, up to two
// thirds of what is left; then the other earlier requests that may
// affect it. Each place is sampled (sample).
func byPlace(vs []Variant, n int, rng *rand.Rand) []Variant {
	var first, writers, rest []Variant
	for _, v := range vs {
		switch v.Place {
		case PlaceFailing:
			first = append(first, v)
		case PlaceWriter:
			writers = append(writers, v)
		default:
			rest = append(rest, v)
		}
	}
	nFirst := share(len(first), n, len(writers)+len(rest))
	// The writers' two thirds rounded up: the others get at most a third,
	// rounded down.
	left := n - nFirst
	nWriters := min(len(writers), left)
	if len(rest) > 0 && nWriters > left-left/3 {
		nWriters = max(left-left/3, left-len(rest))
	}
	return slices.Concat(sample(first, nFirst, rng), sample(writers, nWriters, rng), sample(rest, left-nWriters, rng))
}

// share is how many of have candidates take of n places, when others
// candidates want the rest: all that fit, but at most two thirds when the
// others could fill the remainder.
func share(have, n, others int) int {
	k := min(have, n)
	if others > 0 && k > n*2/3 {
		k = max(n*2/3, n-others)
	}
	return k
}

// sample keeps n of vs in their original order: round by round, the
// first variant of every group, then the second, ...; the round that does
// not fit whole is sampled with rng.
func sample(vs []Variant, n int, rng *rand.Rand) []Variant {
	if n >= len(vs) {
		return vs
	}
	if n <= 0 {
		return nil
	}
	rank := make([]int, len(vs))
	seen := map[string]int{}
	for i, v := range vs {
		rank[i] = seen[v.group]
		seen[v.group]++
	}
	keep := make([]bool, len(vs))
	for r, left := 0, n; left > 0; r++ {
		var round []int
		for i := range vs {
			if rank[i] == r {
				round = append(round, i)
			}
		}
		if len(round) > left {
			rng.Shuffle(len(round), func(a, b int) { round[a], round[b] = round[b], round[a] })
			round = round[:left]
		}
		for _, i := range round {
			keep[i] = true
		}
		left -= len(round)
	}
	return kept(vs, keep)
}
