package variants

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/kavach-dev/kavach"
)

// readBacks are the regression variants of the earlier writes whose key
// a later step names (reads back) before the failing step: the write's
// numbers in other forms (fractions, exponents, negative zero, the
// largest and smallest magnitudes; kavach.Variation.Values's "number-form"),
// the recording cut before the failure. The old build must handle them
// and the new build read back what the old build reads back: a fix that
// changes how a stored number is written (3.3 read back as
// 3.2999999999999998) answers otherwise at the read. Kind "read-back"
// (docs/variants.md, "Read back"). Which steps write and read is
// inferred from the keys each names (Options.Keys) and, when the codec
// says, the keys it writes (kavach.Abilities.Writes); a step whose keys are
// unknown is neither.
func (g *gen) readBacks(out []Variant, cut int) []Variant {
	if g.opts.Variator.Values == nil || g.opts.Keys == nil {
		return out
	}
	readAt := g.readBack()
	var steps []int
	for j := 1; j < g.failing && j <= len(g.steps); j++ {
		if readAt[j] > 0 {
			steps = append(steps, j)
		}
	}
	for _, j := range spread(g.pick(steps), max(1, g.opts.Budget/4)) {
		for _, sub := range g.readBackForms(j) {
			v := g.substituted(j, sub.Substitution, fmt.Sprintf("read-back: step %d: %s, read back at step %d", j, sub.What, readAt[j]), true)
			v.group, v.Kind, v.Place = fmt.Sprintf("step %d read-back", j), "read-back", PlaceRegression
			v.build = cutBefore(v.build, cut+len(sub.Setup), g.failing-1+len(sub.Setup))
			out = g.add(out, v)
		}
	}
	return out
}

// spread keeps n of steps, evenly spaced from the first, when they are
// more: the regression variants' share of the budget is a quarter of it,
// and each write read back is one group there, so more writes than that
// would only cost the making of variants no budget keeps.
func spread(steps []int, n int) []int {
	if len(steps) <= n {
		return steps
	}
	out := make([]int, n)
	for i := range out {
		out[i] = steps[i*len(steps)/n]
	}
	return out
}

// readBack is, for each step j before the failing one that writes a key
// (kavach.Abilities.Writes; without it, every key it names), the first later
// step before the failing one that names a key related to it
// (kavach.KeysRelate); 0 for none. A step whose keys are unknown is
// neither a write nor a read. One pass from the failing step back: each
// key maps to the nearest later step naming it, and each path to the
// nearest later step naming a path below it.
func (g *gen) readBack() []int {
	out := make([]int, g.failing)
	named := map[string]int{} // key -> nearest later step naming it
	below := map[string]int{} // path -> nearest later step naming a path below it
	writes := g.opts.Codec.Abilities().Writes
	nearest := func(best, k int) int {
		if k > 0 && (best == 0 || k < best) {
			return k
		}
		return best
	}
	for j := min(g.failing-1, len(g.steps), len(g.opts.Keys)); j >= 1; j-- {
		keys := g.opts.Keys[j-1]
		written := keys
		if writes != nil && len(keys) > 0 && g.steps[j-1].Request.Flags&kavach.ParseError == 0 {
			written, _ = writes(g.steps[j-1].Request.Data)
		}
		for _, w := range written {
			out[j] = nearest(out[j], named[w])
			out[j] = nearest(out[j], below[w])
			for _, a := range ancestors(w) {
				out[j] = nearest(out[j], named[a])
			}
		}
		for _, k := range keys {
			named[k] = j
			for _, a := range ancestors(k) {
				below[a] = j
			}
		}
	}
	return out
}

// ancestors are the paths a path key is below, as kavach.KeysRelate
// relates them ("/items/2": "/", "/items", "/items/"); none for a key
// that is no path.
func ancestors(key string) []string {
	if !strings.HasPrefix(key, "/") {
		return nil
	}
	var out []string
	for i := 0; i < len(key); i++ {
		if key[i] != '/' {
			continue
		}
		if i > 0 {
			out = append(out, key[:i])
		}
		if i+1 < len(key) {
			out = append(out, key[:i+1])
		}
	}
	return out
}

// readBackForms are step j's number forms a read back can show changed:
// a fraction, an exponent, negative zero (the largest and smallest
// magnitudes are written with an exponent); not an integer written
// otherwise, which the regression variants' field mutations already
// store. The numbers no binary float holds exactly (0.1, 1e-3) come
// first: a lossy round trip changes them, so a budget that keeps a few
// of a write's keeps those.
func (g *gen) readBackForms(j int) []substitution {
	var before []kavach.Field // split when a form does not say what it sets (Edit)
	var inexact, exact []substitution
	for _, sub := range g.valuesOf(j) {
		if sub.kind != "number-form" {
			continue
		}
		v, ok := g.newValue(j, sub, &before)
		switch {
		case !ok, !strings.ContainsAny(v, ".eE") && !strings.HasPrefix(v, "-0"):
		case binaryHolds(v):
			exact = append(exact, sub)
		default:
			inexact = append(inexact, sub)
		}
	}
	return append(inexact, exact...)
}

// newValue is the value sub sets in step j's request: its Edit's, or
// the one field that differs from the recorded request's (before, split
// once, without the schema: it costs less and places the fields alike).
func (g *gen) newValue(j int, sub substitution, before *[]kavach.Field) (string, bool) {
	if sub.Edit != nil {
		return sub.Edit.Value, true
	}
	if *before == nil {
		_, f, ok := g.opts.Variator.Fields(g.steps[j-1].Request.Data, nil)
		if !ok {
			return "", false
		}
		*before = f
	}
	_, after, ok := g.opts.Variator.Fields(sub.Request, nil)
	if !ok || len(after) != len(*before) {
		return "", false
	}
	for i := range after {
		if after[i].Value != (*before)[i].Value {
			return after[i].Value, true
		}
	}
	return "", false
}

// binaryHolds reports whether a binary fraction holds the decimal number
// v exactly (its reduced denominator is a power of two): 2.5 and 1e3
// yes, 0.1 and 1e-3 no. A value that is no decimal number, or longer
// than 64 bytes, counts as held (it is not worth the arithmetic).
func binaryHolds(v string) bool {
	if len(v) > 64 {
		return true
	}
	mant, exp, _ := strings.Cut(strings.ToLower(strings.TrimLeft(v, "+-")), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	e, err := strconv.Atoi(exp)
	if exp == "" {
		e, err = 0, nil
	}
	m, ok := new(big.Int).SetString(whole+frac, 10)
	if err != nil || !ok || whole+frac == "" {
		return true
	}
	// v is m × 10^(e-len(frac)): held when that is an integer, or when
	// 5^k divides m for k = len(frac)-e (m has at most 64 digits, so
	// no k past 100 does, unless m is 0).
	k := len(frac) - e
	if k <= 0 || m.Sign() == 0 {
		return true
	}
	if k > 100 {
		return false
	}
	five := new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(k)), nil)
	return new(big.Int).Mod(m, five).Sign() == 0
}
