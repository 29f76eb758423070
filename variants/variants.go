// Package variants makes mutated copies of an incident: the failing
// request with a field changed or removed, an earlier request's field
// changed with the failing step kept, the failing request moved earlier,
// an earlier request dropped or delivered twice, the clock shifted; and
// regression variants, which mutate the earlier requests the old build
// handled and stop before the failure. Generate is a pure function of (events, failure,
// schema, budget, seed): no I/O, no clock, no global random source; one
// seed gives one set of variants.
package variants

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kavach-dev/kavach"
)

// Variant is one mutated copy of the incident.
type Variant struct {
	K           int    `json:"k"` // from 1
	Description string `json:"description"`
	// Kind is what kind of mutation it is, one of kavach.VariantKinds.
	Kind string `json:"kind"`
	// Regression variants mutate an input the old build handled and stop
	// before the failing step: the old build must not fail on them, and
	// the new build must give the old build's outputs.
	Regression bool           `json:"regression,omitempty"`
	Events     []kavach.Event `json:"-"`
	// Origin maps each step of the variant (index) to the fixture's step
	// it came from, for noise; 0 for none.
	Origin []int `json:"-"`
	// From this step of the variant on, the clock is shifted by Shift.
	ShiftFrom int           `json:"shift_from,omitempty"`
	Shift     time.Duration `json:"shift_ns,omitempty"`

	// build makes Events and Origin of a variant made lazily: only the
	// variants kept in the budget are built. key tells it from the others.
	build func() ([]kavach.Event, []int)
	key   [32]byte

	group   string // what it mutates (a field of a step, moves, drops, ...), for sampling
	primary bool   // mutates the failing request itself, moves it, or shifts the clock
	order   int    // position in the order made
}

// ShiftAt is the clock shift of a step of the variant.
func (v Variant) ShiftAt(step int) time.Duration {
	if v.ShiftFrom > 0 && step >= v.ShiftFrom {
		return v.Shift
	}
	return 0
}

// Options configure Generate.
type Options struct {
	Codec    kavach.Codec    // frames steps; required
	Variator kavach.Variator // splits requests into fields; required
	Schema   kavach.Schema   // field types learned from the old build; nil: guessed
	// Budget is the most variants made; the rest of what could be made is
	// sampled by Seed. Zero means 64.
	Budget int
	Seed   uint64
	// Exclude are variant kinds not to make (kavach.VariantKinds). Nil: none.
	Exclude []string
}

// MissingKey is a key no recording writes, for "a key that does not exist".
const MissingKey = "kavach:missing-key"

// clockShifts are the clock variants: the clock jumps by each, right
// before the failing step.
var clockShifts = []time.Duration{time.Second, -time.Second, time.Minute, -time.Minute, time.Hour, -time.Hour, 24 * time.Hour, -24 * time.Hour}

// Generate makes up to opts.Budget variants of the incident whose failure
// is at step failing. Variants of the incident itself come first (at most
// three quarters of the budget when regression variants could fill the
// rest); then regression variants. Duplicates are removed. When more were
// made than fit, each kind of mutation (a field of a step, moves, drops,
// repeats, clock jumps) gets its first mutation before any gets a second,
// and so on, the last round sampled with Seed; the kept ones stay in the
// order they were made.
func Generate(events []kavach.Event, failing int, opts Options) []Variant {
	if opts.Budget <= 0 {
		opts.Budget = 64
	}
	g := newGen(events, failing, opts)
	incident, regression := g.incident(), g.regression()
	excluded := func(v Variant) bool { return slices.Contains(opts.Exclude, v.Kind) }
	incident, regression = slices.DeleteFunc(incident, excluded), slices.DeleteFunc(regression, excluded)
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6b61766163680000))
	nInc := min(len(incident), opts.Budget)
	if len(regression) > 0 && nInc > opts.Budget*3/4 {
		nInc = max(opts.Budget*3/4, opts.Budget-len(regression))
	}
	// Within the incident's variants, mutations of the failing request
	// itself (and moves and clock jumps) come first: up to two thirds of
	// their share, the rest for the earlier inputs' mutations.
	var first, rest []Variant
	for _, v := range incident {
		if v.primary {
			first = append(first, v)
		} else {
			rest = append(rest, v)
		}
	}
	nFirst := min(len(first), nInc)
	if len(rest) > 0 && nFirst > nInc*2/3 {
		nFirst = max(nInc*2/3, nInc-len(rest))
	}
	chosen := append(sample(first, nFirst, rng), sample(rest, nInc-nFirst, rng)...)
	slices.SortStableFunc(chosen, func(a, b Variant) int { return a.order - b.order })
	out := append(chosen, sample(regression, opts.Budget-nInc, rng)...)
	for i := range out {
		out[i].K = i + 1
		if b := out[i].build; b != nil {
			out[i].Events, out[i].Origin = b()
			out[i].build = nil
		}
	}
	return out
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
	out := make([]Variant, 0, n)
	for i, v := range vs {
		if keep[i] {
			out = append(out, v)
		}
	}
	return out
}

// gen holds what generation needs about the incident.
type gen struct {
	opts    Options
	events  []kavach.Event
	steps   []kavach.Step
	F       int
	seen    map[[32]byte]bool
	strings []string      // string values seen in the fixture
	keys    []string      // keys seen in the fixture
	span    map[int][]int // step -> indexes of its request and response events
	// mutations are each earlier step's field mutations, made once for
	// the incident's variants and the regression variants.
	mutations map[int][]mutation
}

func newGen(events []kavach.Event, failing int, opts Options) *gen {
	g := &gen{opts: opts, events: events, steps: kavach.Steps(events, opts.Codec), F: failing,
		seen: map[[32]byte]bool{}, span: map[int][]int{}, mutations: map[int][]mutation{}}
	bySeq := map[uint64]int{}
	for i, ev := range events {
		bySeq[ev.Seq] = i
	}
	for _, s := range g.steps {
		g.span[s.N] = append(g.span[s.N], bySeq[s.Request.Seq])
		for _, r := range s.Responses {
			g.span[s.N] = append(g.span[s.N], bySeq[r.Seq])
		}
		_, fields, ok := opts.Variator.Fields(s.Request.Data, opts.Schema)
		if !ok {
			continue
		}
		for _, f := range fields {
			switch f.Type {
			case kavach.FieldKey:
				g.keys = appendNew(g.keys, f.Value)
			case kavach.FieldString:
				g.strings = appendNew(g.strings, f.Value)
			}
		}
	}
	g.seen[hash(events, 0, 0)] = true // the incident itself is no variant
	return g
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) || len(list) >= 16 {
		return list
	}
	return append(list, s)
}

// add keeps a variant unless an identical one was made: the same events
// and clock shift, or, for one made lazily, the same key.
func (g *gen) add(out []Variant, v Variant) []Variant {
	h := v.key
	if v.build == nil {
		h = hash(v.Events, v.ShiftFrom, v.Shift)
	}
	if g.seen[h] {
		return out
	}
	g.seen[h] = true
	return append(out, v)
}

func hash(events []kavach.Event, from int, shift time.Duration) [32]byte {
	h := sha256.New()
	var b [8]byte
	for _, ev := range events {
		binary.LittleEndian.PutUint64(b[:], ev.Conn)
		h.Write(b[:])
		h.Write([]byte{byte(ev.Dir)})
		binary.LittleEndian.PutUint64(b[:], uint64(len(ev.Data)))
		h.Write(b[:])
		h.Write(ev.Data)
	}
	binary.LittleEndian.PutUint64(b[:], uint64(from))
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], uint64(shift))
	h.Write(b[:])
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// incident makes the variants of the incident itself.
func (g *gen) incident() []Variant {
	var out []Variant
	for _, m := range g.fieldMutations(g.F, true) {
		v := g.withRequest(g.F, m.request, fmt.Sprintf("step %d: %s", g.F, m.what), false)
		v.group, v.primary = m.group, true
		v.Kind = "field"
		if m.group == "removed" || m.group == "swap" {
			v.Kind = m.group
		}
		out = g.add(out, v)
	}
	for _, sub := range g.substitutions(g.F) {
		v := g.substituted(g.F, sub.Substitution, fmt.Sprintf("step %d: %s", g.F, sub.What), false)
		v.group, v.primary, v.Kind = sub.kind+" "+sub.What, true, sub.kind
		out = g.add(out, v)
	}
	// Earlier inputs mutated, the failing step kept: the input that made
	// the old build fail may have come before it (a value stored, then
	// read wrongly).
	for j := 1; j < g.F; j++ {
		for _, m := range g.fieldMutations(j, false) {
			v := g.withRequest(j, m.request, fmt.Sprintf("step %d (before the failure): %s", j, m.what), false)
			v.group, v.Kind = fmt.Sprintf("step %d %s", j, m.group), "earlier-field"
			out = g.add(out, v)
		}
	}
	for j := 1; j < g.F; j++ {
		v := g.lazily(fmt.Sprintf("moved|%d", j), fmt.Sprintf("step %d (%s) moved before step %d", g.F, g.describe(g.F), j), func() Variant { return g.moved(j) })
		v.group, v.primary, v.Kind = "moved", true, "moved"
		out = g.add(out, v)
	}
	for j := 1; j < g.F; j++ {
		d := g.lazily(fmt.Sprintf("dropped|%d", j), fmt.Sprintf("step %d (%s) dropped", j, g.describe(j)), func() Variant { return g.dropped(j) })
		t := g.lazily(fmt.Sprintf("twice|%d", j), fmt.Sprintf("step %d (%s) delivered twice", j, g.describe(j)), func() Variant { return g.twice(j) })
		d.group, t.group = "dropped", "twice"
		d.Kind, t.Kind = "dropped", "twice"
		out = g.add(out, d)
		out = g.add(out, t)
	}
	if g.F > 1 {
		for _, d := range clockShifts {
			v := g.variant(g.events, fmt.Sprintf("the clock jumps %s right before step %d", signed(d), g.F), false)
			v.ShiftFrom, v.Shift, v.group, v.primary = g.F, d, "clock", true
			v.Kind = "clock-forward"
			if d < 0 {
				v.Kind = "clock-back"
			}
			out = g.add(out, v)
		}
	}
	for i := range out {
		out[i].order = i
	}
	return out
}

// Regression makes the regression variants of a recording with no
// failure (a contract): every step's fields mutated in turn, the rest of
// the recording kept; at most opts.Budget of them (zero: 64), sampled by
// opts.Seed as Generate samples, numbered from 1.
func Regression(events []kavach.Event, opts Options) []Variant {
	if opts.Budget <= 0 {
		opts.Budget = 64
	}
	g := newGen(events, len(kavach.Steps(events, opts.Codec))+1, opts)
	vs := slices.DeleteFunc(g.regression(), func(v Variant) bool { return slices.Contains(opts.Exclude, v.Kind) })
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6b61766163680000))
	out := sample(vs, opts.Budget, rng)
	for i := range out {
		out[i].K = i + 1
		// Variants are built only once chosen (as Generate does).
		if b := out[i].build; b != nil {
			out[i].Events, out[i].Origin = b()
			out[i].build = nil
		}
	}
	return out
}

// regression makes the regression variants: each earlier step's fields
// mutated, the recording cut before the failing step (kept whole when
// there is no failing step: a contract). No key-type substitution here: a
// key of another type written in front of an earlier step changes what
// later steps of that key answer, which the grade cannot yet tell from a
// regression (a correct fix was graded variant_failed under load, and the
// same build was, in a contract); it is for the failing request only.
func (g *gen) regression() []Variant {
	var out []Variant
	cut := len(g.events)
	if span, ok := g.span[g.F]; ok {
		cut = span[0] // the failing request's index
	}
	for j := 1; j < g.F; j++ {
		for _, m := range g.fieldMutations(j, false) {
			v := g.withRequest(j, m.request, fmt.Sprintf("regression: step %d: %s", j, m.what), true)
			v.group, v.Kind = fmt.Sprintf("step %d %s", j, m.group), "regression"
			v.build = cut1(v.build, cut, g.F-1)
			out = g.add(out, v)
		}
	}
	return out
}

type substitution struct {
	kavach.Substitution
	kind string // "type", "grammar" or "sibling"
}

// lazily is a variant built only when it is kept: what describes it,
// key tells it from the others, make builds it.
func (g *gen) lazily(key, what string, make func() Variant) Variant {
	return Variant{Description: what, key: sha256.Sum256([]byte(key)), build: func() ([]kavach.Event, []int) {
		w := make()
		return w.Events, w.Origin
	}}
}

// cut1 makes build stop its variant's events before index events and
// its origin after steps steps.
func cut1(build func() ([]kavach.Event, []int), events, steps int) func() ([]kavach.Event, []int) {
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
// has, then with the other choices its grammar allows, then made by the
// other commands of its family, as far as the Variator knows them.
func (g *gen) substitutions(n int) []substitution {
	req := g.steps[n-1].Request
	if req.Flags&kavach.ParseError != 0 {
		return nil
	}
	var out []substitution
	if tv, ok := g.opts.Variator.(kavach.TypeVariator); ok {
		for _, s := range tv.Substitutions(req.Data, g.opts.Schema) {
			out = append(out, substitution{s, "type"})
		}
	}
	if gv, ok := g.opts.Variator.(kavach.GrammarVariator); ok {
		for _, s := range gv.Rewrites(req.Data, g.opts.Schema) {
			out = append(out, substitution{s, "grammar"})
		}
	}
	if sv, ok := g.opts.Variator.(kavach.SiblingVariator); ok {
		subs, _ := sv.Siblings(req.Data, g.opts.Schema)
		for _, s := range subs {
			out = append(out, substitution{s, "sibling"})
		}
	}
	return out
}

// substituted is the incident with step n's request replaced by sub's,
// and sub's writes inserted right before it on its connection, at its
// time. The writes are new inputs: no origin.
func (g *gen) substituted(n int, sub kavach.Substitution, what string, regression bool) Variant {
	v := Variant{Description: what, Regression: regression, key: lazyKey(n, regression, sub.Setup, sub.Request)}
	v.build = func() ([]kavach.Event, []int) {
		w := g.substitutedNow(n, sub)
		return w.Events, w.Origin
	}
	return v
}

func (g *gen) substitutedNow(n int, sub kavach.Substitution) Variant {
	i := g.span[n][0]
	req := g.events[i]
	events := make([]kavach.Event, 0, len(g.events)+len(sub.Setup))
	events = append(events, g.events[:i]...)
	for _, w := range sub.Setup {
		events = append(events, kavach.Event{Conn: req.Conn, Dir: kavach.Request, Offset: req.Offset, Data: w})
	}
	req.Data, req.Flags = sub.Request, req.Flags&^kavach.Redacted
	events = append(events, req)
	events = append(events, g.events[i+1:]...)
	return g.variant(events, "", false)
}

// mutation is a request with one change, what the change was, and which
// part of the request it changed.
type mutation struct {
	request []byte
	what    string
	group   string
}

// fieldMutations changes each field of step n's request in turn (design
// §4, docs/design.md): numbers to boundaries, neighbours, signs and huge values; strings
// to empty, other values seen, a long value; keys to a missing key and
// other recorded keys; tokens to the other tokens; any field removed; and,
// when all is true, fields swapped with requests of the same kind.
func (g *gen) fieldMutations(n int, all bool) []mutation {
	if m, ok := g.mutations[n]; ok && !all {
		return m
	}
	m := g.fieldMutationsNow(n, all)
	if !all {
		g.mutations[n] = m
	}
	return m
}

func (g *gen) fieldMutationsNow(n int, all bool) []mutation {
	req := g.steps[n-1].Request
	if req.Flags&kavach.ParseError != 0 {
		return nil
	}
	kind, fields, ok := g.opts.Variator.Fields(req.Data, g.opts.Schema)
	if !ok {
		return nil
	}
	var out []mutation
	set := func(i int, value, from string) {
		if value == fields[i].Value {
			return
		}
		f := slices.Clone(fields)
		f[i].Value = value
		what := fmt.Sprintf("%s %s → %s", argName(i, fields[i]), quote(fields[i].Value), quote(value))
		if from != "" {
			what += ", " + from
		}
		group := fmt.Sprintf("field %d", i)
		if from != "" && strings.HasPrefix(from, "taken from") {
			group = "swap"
		}
		out = append(out, mutation{g.opts.Variator.Rebuild(req.Data, f), what, group})
	}
	for i, f := range fields {
		switch f.Type {
		case kavach.FieldNumber:
			for _, v := range numbers(f.Value) {
				set(i, v, "")
			}
		case kavach.FieldString:
			// Empty and long first: the boundaries; then values seen.
			set(i, "", "")
			set(i, strings.Repeat("x", 4096), "")
			for _, s := range g.strings {
				set(i, s, "a value seen in the recording")
			}
		case kavach.FieldKey:
			set(i, MissingKey, "a key that does not exist")
			for _, k := range g.keys {
				set(i, k, "another recorded key")
			}
		case kavach.FieldToken:
			for _, t := range f.Alternatives {
				set(i, t, "")
			}
		}
	}
	for i := range fields {
		f := slices.Delete(slices.Clone(fields), i, i+1)
		out = append(out, mutation{g.opts.Variator.Rebuild(req.Data, f), fmt.Sprintf("%s %s removed", argName(i, fields[i]), quote(fields[i].Value)), "removed"})
	}
	if all {
		for _, s := range g.steps {
			if s.N == n {
				continue
			}
			k2, f2, ok := g.opts.Variator.Fields(s.Request.Data, g.opts.Schema)
			if !ok || k2 != kind || len(f2) != len(fields) {
				continue
			}
			for i := range fields {
				set(i, f2[i].Value, fmt.Sprintf("taken from step %d", s.N))
			}
		}
	}
	return out
}

func argName(i int, f kavach.Field) string {
	if f.Name != "" {
		return fmt.Sprintf("argument %d (%s)", i+1, f.Name)
	}
	return fmt.Sprintf("argument %d", i+1)
}

func quote(s string) string {
	if len(s) > 24 {
		return strconv.Quote(s[:12]) + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

// numbers are the mutations of an integer: boundaries, neighbours, signs,
// doubling and halving, and values past 32 and 64 bits.
func numbers(v string) []string {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return []string{"0", "-1", "1"}
	}
	out := []string{"0", "1", "-1"}
	for _, x := range []int64{n + 1, n - 1, -n, n * 2, n / 2} {
		out = append(out, strconv.FormatInt(x, 10))
	}
	return append(out, "2147483648", "-2147483649", "9223372036854775807", "-9223372036854775808", "99999999999999999999")
}

func signed(d time.Duration) string {
	if d < 0 {
		return "-" + human(-d)
	}
	return "+" + human(d)
}

func human(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// variant wraps events as a variant: every step's origin is found by its
// request's sequence number (0 for a new event), then the events are
// numbered afresh from 1.
func (g *gen) variant(events []kavach.Event, what string, regression bool) Variant {
	orig := map[uint64]int{}
	for _, s := range g.steps {
		orig[s.Request.Seq] = s.N
	}
	var origin []int
	events = slices.Clone(events)
	for i, ev := range events {
		if ev.Dir == kavach.Request {
			origin = append(origin, orig[ev.Seq])
		}
		events[i].Seq = uint64(i + 1)
	}
	return Variant{Description: what, Regression: regression, Events: events, Origin: origin}
}

// withRequest is the incident with step n's request replaced. A changed
// request is a new input: its origin is kept for noise, since its replies
// are compared old build against new build only.
func (g *gen) withRequest(n int, request []byte, what string, regression bool) Variant {
	v := Variant{Description: what, Regression: regression, key: lazyKey(n, regression, nil, request)}
	v.build = func() ([]kavach.Event, []int) {
		events := slices.Clone(g.events)
		i := g.span[n][0]
		events[i].Data = request
		events[i].Flags &^= kavach.Redacted
		w := g.variant(events, "", false)
		return w.Events, w.Origin
	}
	return v
}

// moved is the incident with the failing request (and its replies, and
// the server's close of its connection when the recording ended it there)
// moved right before step j, at step j's time. Moving the close along
// makes the replay wait for the moved request's outcome where it now is.
func (g *gen) moved(j int) Variant {
	block := slices.Clone(g.span[g.F])
	conn := g.steps[g.F-1].Conn()
	for i := slices.Max(block) + 1; i < len(g.events); i++ {
		if ev := g.events[i]; ev.Conn == conn {
			if ev.Dir == kavach.Close && string(ev.Data) == "server" {
				block = append(block, i)
			}
			break
		}
	}
	at := g.span[j][0]
	var moved, rest []kavach.Event
	for i, ev := range g.events {
		if slices.Contains(block, i) {
			ev.Offset = g.events[at].Offset
			moved = append(moved, ev)
		} else {
			rest = append(rest, ev)
		}
	}
	// Insert before step j's request, which keeps its index in rest
	// (everything moved came after it).
	events := slices.Concat(rest[:at], moved, rest[at:])
	return g.variant(events, fmt.Sprintf("step %d (%s) moved before step %d", g.F, g.describe(g.F), j), false)
}

// dropped is the incident without step j's request and replies.
func (g *gen) dropped(j int) Variant {
	var events []kavach.Event
	for i, ev := range g.events {
		if !slices.Contains(g.span[j], i) {
			events = append(events, ev)
		}
	}
	return g.variant(events, fmt.Sprintf("step %d (%s) dropped", j, g.describe(j)), false)
}

// twice is the incident with step j's request and replies delivered
// twice; both copies have step j as their origin.
func (g *gen) twice(j int) Variant {
	var events []kavach.Event
	last := slices.Max(g.span[j])
	for i, ev := range g.events {
		events = append(events, ev)
		if i == last {
			for _, k := range g.span[j] {
				// The copy keeps its Seq, so the repeated step keeps
				// step j as its origin, and with it step j's noise.
				events = append(events, g.events[k])
			}
		}
	}
	return g.variant(events, fmt.Sprintf("step %d (%s) delivered twice", j, g.describe(j)), false)
}

func (g *gen) describe(n int) string {
	return g.opts.Codec.DescribeRequest(g.steps[n-1].Request.Data, 48)
}
