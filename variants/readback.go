package variants

import (
	"fmt"
	"math"
	"math/big"
	"slices"
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
	// The writes by the failing request's own command come first: a fix
	// changes the code of the command that failed, and how that command
	// stores a number is what its fix may have changed (docs/variants.md,
	// "Read back").
	failing := ""
	if g.failing <= len(g.steps) {
		_, failing, _, _ = g.fieldsOf(g.failing)
	}
	var same, others []int
	for j := 1; j < g.failing && j <= len(g.steps); j++ {
		if readAt[j] == 0 {
			continue
		}
		if _, kind, _, ok := g.fieldsOf(j); ok && failing != "" && kind == failing {
			same = append(same, j)
		} else {
			others = append(others, j)
		}
	}
	n := max(1, g.opts.Budget/4)
	same = spread(same, n)
	steps := slices.Concat(same, spread(g.pick(others), n-len(same)))
	for _, j := range steps {
		affine := slices.Contains(same, j)
		for _, sub := range g.readBackForms(j) {
			v := g.substituted(j, sub.Substitution, fmt.Sprintf("read-back: step %d: %s, read back at step %d", j, sub.What, readAt[j]), true)
			v.group, v.Kind, v.Place, v.affine = fmt.Sprintf("step %d read-back", j), "read-back", PlaceRegression, affine
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
	if n <= 0 {
		return nil
	}
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
// store. First the forms whose stored number, written with 17
// significant digits, is not the number written at its shortest (a
// lossy round trip shows in them: 10.001 is 10.000999999999999); the
// stored number is the write's own recorded answer where that is a
// number (an increment answers what it stored: the answer less the
// recorded value plus the new one), else the new value. Then the other
// numbers no binary float holds exactly (0.1, 1e-3), then the rest: a
// budget that keeps a few of a write's keeps those that can show it.
func (g *gen) readBackForms(j int) []substitution {
	var before []kavach.Field // the recorded request's fields, split when first needed
	answer, answered := g.numberAnswered(j)
	var shows, inexact, exact []substitution
	for _, sub := range g.valuesOf(j) {
		if sub.kind != "number-form" {
			continue
		}
		v, field, ok := g.newValue(j, sub, &before)
		switch {
		case !ok, !strings.ContainsAny(v, ".eE") && !strings.HasPrefix(v, "-0"):
		case showsAt17(g.stored(j, v, field, answer, answered, &before)):
			shows = append(shows, sub)
		case binaryHolds(v):
			exact = append(exact, sub)
		default:
			inexact = append(inexact, sub)
		}
	}
	return slices.Concat(shows, inexact, exact)
}

// numberAnswered is step j's recorded answer, when it is one number.
func (g *gen) numberAnswered(j int) (float64, bool) {
	s := g.steps[j-1]
	if len(s.Responses) != 1 {
		return 0, false
	}
	return number(g.opts.Codec.Normalize(s.Request.Data, s.Responses[0].Data))
}

// stored is the number step j stores with v in its field: when the step
// answered a number and the field held one, the answer less what the
// field held plus v (an increment answers what it stored: INCRBYFLOAT k
// 2.5 answered 12.5, so 10 plus v); else v. ok is false when v is no
// finite number.
func (g *gen) stored(j int, v string, field int, answer float64, answered bool, before *[]kavach.Field) (float64, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	if answered && g.recordedFields(j, before) && field < len(*before) {
		if was, err := strconv.ParseFloat((*before)[field].Value, 64); err == nil {
			return answer - was + f, true
		}
	}
	return f, true
}

// number is a normalized answer as a number: an integer, or a string
// that reads as a finite one.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	case []byte:
		return number(string(x))
	}
	return 0, false
}

// showsAt17 reports whether the stored number f (when ok) has a fraction
// and reads otherwise with 17 significant digits than at its shortest.
func showsAt17(f float64, ok bool) bool {
	if !ok || f == math.Trunc(f) {
		return false // a whole number: stored and read back as one
	}
	return strconv.FormatFloat(f, 'g', 17, 64) != strconv.FormatFloat(f, 'g', -1, 64)
}

// recordedFields splits step j's recorded request into *before, once,
// without the schema (it costs less and places the fields alike).
func (g *gen) recordedFields(j int, before *[]kavach.Field) bool {
	if *before == nil {
		_, f, ok := g.opts.Variator.Fields(g.steps[j-1].Request.Data, nil)
		if !ok {
			return false
		}
		*before = f
	}
	return true
}

// newValue is the value sub sets in step j's request, and the field it
// sets: its Edit's, or the one field that differs from the recorded
// request's (before, split once).
func (g *gen) newValue(j int, sub substitution, before *[]kavach.Field) (string, int, bool) {
	if sub.Edit != nil {
		return sub.Edit.Value, sub.Edit.Field, true
	}
	if !g.recordedFields(j, before) {
		return "", 0, false
	}
	_, after, ok := g.opts.Variator.Fields(sub.Request, nil)
	if !ok || len(after) != len(*before) {
		return "", 0, false
	}
	for i := range after {
		if after[i].Value != (*before)[i].Value {
			return after[i].Value, i, true
		}
	}
	return "", 0, false
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
