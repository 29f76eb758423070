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
// largest and smallest magnitudes; kavach.ValueVariator's "number-form"),
// the recording cut before the failure. The old build must handle them
// and the new build read back what the old build reads back: a fix that
// changes how a stored number is written (3.3 read back as
// 3.2999999999999998) answers otherwise at the read. Kind "read-back"
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
		for _, sub := range g.readBackForms(j) {
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

// readBackForms are step j's number forms a read back can show changed:
// a fraction, an exponent, negative zero (the largest and smallest
// magnitudes are written with an exponent); not an integer written
// otherwise, which the regression variants' field mutations already
// store. The numbers no binary float holds exactly (0.1, 1e-3) come
// first: a lossy round trip changes them, so a budget that keeps a few
// of a write's keeps those.
func (g *gen) readBackForms(j int) []substitution {
	_, before, ok := g.opts.Variator.Fields(g.steps[j-1].Request.Data, g.opts.Schema)
	if !ok {
		return nil
	}
	var inexact, exact []substitution
	for _, sub := range g.values(j) {
		if sub.kind != "number-form" {
			continue
		}
		_, after, ok := g.opts.Variator.Fields(sub.Request, g.opts.Schema)
		if !ok || len(after) != len(before) {
			continue
		}
		i := 0
		for i < len(after) && after[i].Value == before[i].Value {
			i++
		}
		if i == len(after) {
			continue
		}
		switch v := after[i].Value; {
		case !strings.ContainsAny(v, ".eE") && !strings.HasPrefix(v, "-0"):
		case binaryHolds(v):
			exact = append(exact, sub)
		default:
			inexact = append(inexact, sub)
		}
	}
	return append(inexact, exact...)
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
