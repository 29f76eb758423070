package grade

import (
	"slices"

	"github.com/kavach-dev/kavach"
)

// KindCount is what became of the variants of one kind in a diff.
type KindCount struct {
	Kind      string `json:"kind"`      // kavach.VariantKinds
	Generated int    `json:"generated"` // run (kept or not)
	// Reproduced: variants of the incident that failed on the old build
	// the recorded way. Handled: regression variants the old build
	// handled without failing. One of the two is 0 for a kind, but
	// aggregate, which has both.
	Reproduced int `json:"reproduced"`
	Handled    int `json:"handled"`
	Failed     int `json:"failed"` // kept, and failed on the new build
	// Regression: the kind's variants are regression variants, counted
	// as handled, not reproduced. Told by the variants, not by the kind's
	// name, so that every kind, one added later too, is shown rightly.
	Regression bool `json:"regression,omitempty"`
	// Applicable is how many variants of the kind could be made of this
	// incident before the budget kept some (variants.Counted); 0 in a
	// report written before it was counted. A kind applicable and not
	// generated got none of the budget.
	Applicable int `json:"applicable,omitempty"`
}

// WithApplicable sets each kind's Applicable from applicable (kind →
// how many could be made), and adds the kinds applicable but not
// generated, in the order of kavach.VariantKinds.
func WithApplicable(kinds []KindCount, applicable map[string]int) []KindCount {
	out := slices.Clone(kinds)
	for i := range out {
		out[i].Applicable = applicable[out[i].Kind]
	}
	for kind, n := range applicable {
		if n > 0 && !slices.ContainsFunc(out, func(k KindCount) bool { return k.Kind == kind }) {
			out = append(out, KindCount{Kind: kind, Applicable: n})
		}
	}
	slices.SortStableFunc(out, func(a, b KindCount) int { return kindRank(a.Kind) - kindRank(b.Kind) })
	return out
}

// Starved are the kinds applicable to the incident that got no variant,
// but those excluded.
func Starved(kinds []KindCount, excluded []string) []KindCount {
	var out []KindCount
	for _, k := range kinds {
		if k.Applicable > 0 && k.Generated == 0 && !slices.Contains(excluded, k.Kind) {
			out = append(out, k)
		}
	}
	return out
}

// kindRank is a kind's place in kavach.VariantKinds; one it does not
// know comes after them.
func kindRank(kind string) int {
	if i := slices.Index(kavach.VariantKinds, kind); i >= 0 {
		return i
	}
	return len(kavach.VariantKinds)
}

// CountKinds groups variants by kind, in the order of
// kavach.VariantKinds (a kind it does not know after them, by name). It
// keeps no list of kinds of its own: a kind is counted when a variant
// of it is there.
func CountKinds(list []VariantEvidence) []KindCount {
	by := map[string]*KindCount{}
	var kinds []string
	for _, v := range list {
		k := by[v.Kind]
		if k == nil {
			k = &KindCount{Kind: v.Kind}
			by[v.Kind] = k
			kinds = append(kinds, v.Kind)
		}
		k.Generated++
		k.Regression = k.Regression || v.Regression
		switch {
		case v.Kept && v.Regression:
			k.Handled++
		case v.Kept:
			k.Reproduced++
		}
		if v.Kept && v.FailedStep > 0 {
			k.Failed++
		}
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if ra, rb := kindRank(a), kindRank(b); ra != rb {
			return ra - rb
		}
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
		return 0
	})
	out := make([]KindCount, len(kinds))
	for i, k := range kinds {
		out[i] = *by[k]
	}
	return out
}
