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
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	Regression bool `json:"regression,omitempty"`
	// Place is where the mutation is (docs/variants.md, "Budget where the
	// failure lives"): PlaceFailing, PlaceWriter, PlaceOther or
	// PlaceRegression.
	Place  string         `json:"place"`
	Events []kavach.Event `json:"-"`
	// Origin maps each step of the variant (index) to the fixture's step
	// it came from, for noise; 0 for none.
	Origin []int `json:"-"`
	// From this step of the variant on, the clock is shifted by Shift.
	ShiftFrom int           `json:"shift_from,omitempty"`
	Shift     time.Duration `json:"shift_ns,omitempty"`

	// FailsAt is, for a variant of the incident, the fixture's step
	// whose request the old build must fail the recorded way at for the
	// variant to reproduce (a transplant's: the request the trigger went
	// into); 0: the failing step.
	FailsAt int `json:"fails_at,omitempty"`

	// HandOff is, for an "upgrade" variant, the step at which the builds
	// take over from the old build: the old build replays the steps
	// before it and its state is saved; each build then starts from that
	// state and replays the rest (docs/variants.md, "Upgrade"). 0: every
	// build replays every step.
	HandOff int `json:"hand_off,omitempty"`

	// build makes Events and Origin of a variant made lazily: only the
	// variants kept in the budget are built. key tells it from the others.
	build func() ([]kavach.Event, []int)
	key   [32]byte
	// describe makes Description of a variant made lazily, once kept.
	describe func() string

	// Alternates are, for a variant of a writer's value (kind
	// "writer-value"), the next values of the same part of the same
	// field, in the order made, at most maxAlternates: a value the old
	// build refuses at the writer stores nothing, and the grader tries
	// the next (docs/variants.md, "A value the writer refuses").
	Alternates []Variant `json:"-"`

	group string // what it mutates (a field of a step, moves, drops, ...), for sampling
	alt   string // the writer's step, field and part a writer-value varies, for Alternates
	// affine: a read-back of a write by the failing request's own
	// command, which the budget's first round prefers.
	affine  bool
	primary bool // mutates the failing request itself, moves it, or shifts the clock
	// cause is the earlier step a variant placed at a writer mutates (a
	// cause of the failure, for the budget's first rounds); 0 for others.
	cause int
	order int // position in the order made
}

// Writer is, for a variant of a writer's value (kind "writer-value"),
// the step of the events it was made from whose request it varies; 0
// for every other variant.
func (v Variant) Writer() int {
	if v.Kind != "writer-value" {
		return 0
	}
	return v.cause
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
	Codec    kavach.Integration // frames steps; required
	Variator *kavach.Variation  // the integration's Variation: fields of requests; required
	Schema   kavach.Schema      // field types learned from the old build; nil: guessed
	// Budget is the most variants made; the rest of what could be made is
	// sampled by Seed. Zero means DefaultBudget.
	Budget int
	// Cap, when above Budget, lets the budget grow with what is
	// applicable (docs/variants.md, "Every kind before any twice"): Budget
	// and one more per slot of the first rounds, at most Cap. Zero: the
	// budget is Budget.
	Cap  int
	Seed uint64
	// Exclude are variant kinds not to make (kavach.VariantKinds). Nil: none.
	Exclude []string
	// Upgrade: a build's state can be saved and another build started
	// from it (kavach.Abilities.SaveData), so an "upgrade" variant is made
	// (Variant.HandOff).
	Upgrade bool
	// Start is the wall-clock time of the recording's offset 0 (the
	// fixture's start), for values that are times; zero: unknown.
	Start time.Time
	// Keys are the keys (resources) each step names, index 0 for step 1,
	// as kavach.Abilities.Keys gives them: nil when unknown. They tell which
	// earlier steps can affect the failing one. Nil Keys: every step may.
	Keys [][]string
	// Writes are the keys each step writes, as the build says them
	// (kavach.Abilities.Keys: COMMAND GETKEYSANDFLAGS' flags), index 0 for
	// step 1; a nil entry, or nil Writes: the codec's Writes decides.
	// COPY tmp greeting writes greeting and reads tmp: which the codec's
	// list of commands cannot tell.
	Writes [][]string
	// Replaces are, by step (index 0 for step 1), the keys the step
	// replaces whole without reading them, as the build says
	// (kavach.Abilities.Keys: SET's, DEL's): no step before it writes
	// what a later step reads of such a key, so none of those is a
	// writer of the failing request's keys through it. Nil: none known.
	Replaces [][]string
	// Deferred leaves the kept variants' Events and Origin unmade:
	// Variant.Build makes them when the variant is replayed. A long
	// recording's variants are then not all in memory at once (each is a
	// copy of the recording). False: Generate and Regression make them.
	Deferred bool
	// StepOffset is added to every step number the descriptions name: the
	// events given are a window of a long recording whose first step is
	// step StepOffset+1 of the fixture. Zero: the events are the
	// recording.
	StepOffset int
	// StepOf, when set, maps every step number the descriptions name to
	// the fixture's instead of StepOffset: the events given are steps of
	// a long recording picked out of it (its dependency slice), not a
	// run of consecutive ones.
	StepOf func(n int) int
}

// Where a variant's mutation is: the failing request itself (and moves
// of it, clock jumps), an earlier request that writes a key the failing
// request names, any other earlier request that may affect it, or a
// regression variant.
const (
	PlaceFailing    = "failing"
	PlaceWriter     = "writer"
	PlaceOther      = "other"
	PlaceRegression = "regression"
)

// MissingKey is a key no recording writes, for "a key that does not exist".
const MissingKey = "kavach:missing-key"

// clockShifts are the clock variants: the clock jumps by each, right
// before the failing step.
var clockShifts = []time.Duration{time.Second, -time.Second, time.Minute, -time.Minute, time.Hour, -time.Hour, 24 * time.Hour, -24 * time.Hour}

// countKinds counts variants by kind.
func countKinds(lists ...[]Variant) map[string]int {
	out := map[string]int{}
	for _, vs := range lists {
		for _, v := range vs {
			out[v.Kind]++
		}
	}
	return out
}

// Build returns the variant's events and the origin of each of its
// steps, made now when Options.Deferred left them unmade. Each call of a
// deferred variant makes a new copy, which the caller drops when done.
func (v *Variant) Build() ([]kavach.Event, []int) {
	if v.build != nil {
		return v.build()
	}
	return v.Events, v.Origin
}

// finish builds a variant made lazily, once kept, unless its building
// is deferred to Build. Deferred builds may run at once (a diff's
// workers): they take turns, since building fills caches of g's.
func (g *gen) finish(v *Variant) {
	switch b := v.build; {
	case b != nil && g.opts.Deferred:
		v.build = func() ([]kavach.Event, []int) {
			g.mu.Lock()
			defer g.mu.Unlock()
			return b()
		}
	case b != nil:
		v.Events, v.Origin = b()
		v.build = nil
	}
	if d := v.describe; d != nil {
		v.Description = d()
		v.describe = nil
	}
	if g.opts.StepOf != nil {
		v.Description = MapSteps(v.Description, g.opts.StepOf)
	} else {
		v.Description = ShiftSteps(v.Description, g.opts.StepOffset)
	}
}

// ShiftSteps adds offset to every step number s names ("step 12"), except
// inside quoted strings (a request's arguments, as descriptions show
// them).
func ShiftSteps(s string, offset int) string {
	if offset == 0 {
		return s
	}
	return MapSteps(s, func(n int) int { return n + offset })
}

// MapSteps replaces every step number s names ("step 12") by to's
// image of it, except inside quoted strings.
func MapSteps(s string, to func(n int) int) string {
	if !strings.Contains(s, "step ") {
		return s
	}
	var b strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s):
			b.WriteByte(c)
			i++
			b.WriteByte(s[i])
			continue
		case c == '"':
			quoted = !quoted
		case !quoted && strings.HasPrefix(s[i:], "step ") && (i == 0 || !isWordByte(s[i-1])):
			j := i + len("step ")
			k := j
			for k < len(s) && '0' <= s[k] && s[k] <= '9' {
				k++
			}
			if k > j && (k == len(s) || !isWordByte(s[k])) {
				n, _ := strconv.Atoi(s[j:k])
				b.WriteString("step " + strconv.Itoa(to(n)))
				i = k - 1
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// gen holds what generation needs about the incident.
type gen struct {
	opts    Options
	events  []kavach.Event
	steps   []kavach.Step
	failing int // the failing step's number, from 1
	seen    map[[32]byte]bool
	strings []string      // string values seen in the fixture
	keys    []string      // keys seen in the fixture
	span    map[int][]int // step -> indexes of its request and response events
	// mutations are each earlier step's field mutations, made once for
	// the incident's variants and the regression variants.
	mutations map[int][]mutation
	// place is, for each earlier step, where a mutation of it is
	// (PlaceWriter, PlaceOther), or "" when it cannot affect the failing
	// step (placeOf).
	place map[int]string
	fed   []int                 // earlier steps placed only because the failing request reads an aggregate (feeders)
	orig  map[uint64]int        // request Seq -> step, made once (variant)
	rank  []int                 // step -> its place in the seeded order pick keeps
	types map[string][]seenType // kind and field key -> its types (typedAs)
	// wide are the fields of the requests whose mutations are told apart
	// by what they change, not by their bytes (makeFieldMutations): a
	// request too large to copy once per candidate.
	wide map[int][]kavach.Field
	mu   sync.Mutex // deferred builds (finish)
	// stepValues are earlier steps' value variants (valuesOf).
	stepValues map[int][]substitution
}

func newGen(events []kavach.Event, failing int, opts Options) *gen {
	g := &gen{opts: opts, events: events, steps: kavach.Steps(events, opts.Codec), failing: failing,
		seen: make(map[[32]byte]bool, 4096), span: make(map[int][]int, failing+1), mutations: map[int][]mutation{}}
	bySeq := map[uint64]int{}
	for i, ev := range events {
		bySeq[ev.Seq] = i
	}
	for _, s := range g.steps {
		g.span[s.N] = append(g.span[s.N], bySeq[s.Request.Seq])
		for _, r := range s.Responses {
			g.span[s.N] = append(g.span[s.N], bySeq[r.Seq])
		}
		if len(g.keys) >= maxSeen && len(g.strings) >= maxSeen {
			continue
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
	g.place = g.places()
	g.fed = g.feeders(g.place)
	return g
}

// places says where each earlier step's mutations go: an earlier step
// that names a key the failing request names (keys relate as
// kavach.KeysRelate says) and writes it (kavach.Abilities.Writes; without it,
// naming it is enough) is a writer; a step whose keys are unknown or
// none (a command on the whole server: FLUSHALL, CONFIG SET, a script),
// or that names the key without writing it, is other; a step that names
// only keys the failing request does not is left out: it cannot affect
// the failing step. When the failing request's own keys are unknown or
// none, every earlier step is other.
func (g *gen) places() map[int]string {
	out := map[int]string{}
	keysOf := func(n int) []string {
		if n-1 < len(g.opts.Keys) {
			return g.opts.Keys[n-1]
		}
		return nil
	}
	kF := keysOf(g.failing)
	// Backwards from the failing step: the keys it reads, and the keys
	// each writer of a needed key reads (COPY tmp greeting needs tmp), so
	// that a writer of a writer's input is a writer too (the dependency
	// slice's writers, transitively).
	needed := slices.Clone(kF)
	for j := min(g.failing-1, len(g.steps)); j >= 1; j-- {
		kj := keysOf(j)
		if len(kF) == 0 || len(kj) == 0 {
			out[j] = PlaceOther
			continue
		}
		if !anyRelate(kj, needed) {
			out[j] = ""
			continue
		}
		out[j] = PlaceOther
		w, known := g.writesOf(j)
		if !known {
			out[j] = PlaceWriter
			continue
		}
		if !anyRelate(w, needed) {
			continue
		}
		out[j] = PlaceWriter
		for _, k := range kj {
			if !slices.Contains(w, k) && !slices.Contains(needed, k) {
				needed = append(needed, k)
			}
		}
		// A key it replaces whole is not needed before it: what the
		// failing step reads of it is this step's, not an earlier one's.
		if j-1 < len(g.opts.Replaces) {
			needed = slices.DeleteFunc(needed, func(k string) bool { return slices.Contains(g.opts.Replaces[j-1], k) })
		}
	}
	return out
}

// writesOf are the keys step j writes: the build's word (Options.Writes)
// where given, else the codec's (Writes); known is false when neither
// can tell (every key it names may be written).
func (g *gen) writesOf(j int) (w []string, known bool) {
	if j-1 < len(g.opts.Writes) && g.opts.Writes[j-1] != nil {
		return g.opts.Writes[j-1], true
	}
	writes := g.opts.Codec.Abilities().Writes
	if writes == nil {
		return nil, false
	}
	w, _ = writes(g.steps[j-1].Request.Data)
	return w, true
}

func anyRelate(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if kavach.KeysRelate(x, y) {
				return true
			}
		}
	}
	return false
}

// maxSeen is how many keys, and how many strings, seen in the recording
// are kept for field mutations: the first ones.
const maxSeen = 16

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) || len(list) >= maxSeen {
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
	for _, m := range g.fieldMutations(g.failing, true) {
		var v Variant
		if m.build == nil {
			v = g.withRequest(g.failing, m.request, fmt.Sprintf("step %d: %s", g.failing, m.what), false)
		} else {
			v = g.edited(g.failing, m)
		}
		v.group, v.primary, v.Place = m.group, true, PlaceFailing
		v.Kind = "field"
		if m.group == "removed" || m.group == "swap" {
			v.Kind = m.group
		}
		out = g.add(out, v)
	}
	for _, sub := range g.substitutions(g.failing, true) {
		var v Variant
		if sc, ok := g.scenario(sub.Substitution); ok && sub.kind == "sibling" {
			v = g.withScenario(sc, fmt.Sprintf("step %d: %s", g.failing, sc.sub.What))
		} else {
			v = g.substituted(g.failing, sub.Substitution, fmt.Sprintf("step %d: %s", g.failing, sub.What), false)
		}
		v.group, v.primary, v.Kind, v.Place = sub.kind+" "+sub.What, true, sub.kind, PlaceFailing
		if sub.Group != "" {
			v.group = sub.kind + " " + sub.Group
		}
		out = g.add(out, v)
	}
	for _, v := range g.typedSiblings() {
		out = g.add(out, v)
	}
	// Earlier inputs mutated, the failing step kept: the input that made
	// the old build fail may have come before it (a value stored, then
	// read wrongly).
	affecting := g.affecting()
	out = slices.Grow(out, 20*len(affecting))
	for _, j := range affecting {
		for _, m := range g.fieldMutations(j, false) {
			v := g.mutated(j, m, "step %d (before the failure): %s", false)
			v.group, v.Kind, v.Place, v.cause = m.group, "earlier-field", g.place[j], j
			out = g.add(out, v)
		}
	}
	out = g.writerValues(out, affecting)
	out = g.modes(out, affecting)
	// Moving the failing request before a step that cannot affect it is
	// moving it before the next one that can.
	for _, j := range affecting {
		v := g.lazily(fmt.Sprintf("moved|%d", j), func() string {
			return fmt.Sprintf("step %d (%s) moved before step %d", g.failing, g.describe(g.failing), j)
		}, func() Variant { return g.moved(j) })
		v.group, v.primary, v.Kind, v.Place = "moved", true, "moved", PlaceFailing
		out = g.add(out, v)
	}
	for _, j := range affecting {
		d := g.lazily(fmt.Sprintf("dropped|%d", j), func() string { return fmt.Sprintf("step %d (%s) dropped", j, g.describe(j)) }, func() Variant { return g.dropped(j) })
		t := g.lazily(fmt.Sprintf("twice|%d", j), func() string { return fmt.Sprintf("step %d (%s) delivered twice", j, g.describe(j)) }, func() Variant { return g.twice(j) })
		d.group, t.group = "dropped", "twice"
		d.Kind, t.Kind = "dropped", "twice"
		d.Place, t.Place = g.place[j], g.place[j]
		d.cause, t.cause = j, j
		out = g.add(out, d)
		out = g.add(out, t)
	}
	// After the earlier steps' mutations: one of them that makes the
	// same request is kept, and the transplant is not made again.
	for _, v := range g.transplants() {
		out = g.add(out, v)
	}
	if g.failing > 1 {
		for _, d := range clockShifts {
			v := Variant{Description: fmt.Sprintf("the clock jumps %s right before step %d", signed(d), g.failing), key: sha256.Sum256(fmt.Appendf(nil, "clock|%d", d))}
			v.build = func() ([]kavach.Event, []int) {
				w := g.variant(slices.Clone(g.events), "", false)
				return w.Events, w.Origin
			}
			v.ShiftFrom, v.Shift, v.group, v.primary, v.Place = g.failing, d, "clock", true, PlaceFailing
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

// upgrade is the incident handed from the old build to each build at the
// failing step (docs/variants.md, "Upgrade"): its events unchanged, the
// old build replaying the steps before the failing one and each build
// starting from the state that left. It finds a fix that mends what the
// new build writes but not what the old build wrote, as an upgrade or a
// hot fix meets data written before it. None when the builds' state
// cannot be handed over (Options.Upgrade) or nothing comes before the
// failing step.
func (g *gen) upgrade() (Variant, bool) {
	if !g.opts.Upgrade || g.failing < 2 {
		return Variant{}, false
	}
	v := Variant{Kind: "upgrade", Place: PlaceFailing, HandOff: g.failing, group: "upgrade", primary: true,
		Description: fmt.Sprintf("from step %d on, each build starts from the data the old build left before it", g.failing),
		key:         sha256.Sum256([]byte("upgrade"))}
	v.build = func() ([]kavach.Event, []int) {
		w := g.variant(slices.Clone(g.events), "", false)
		return w.Events, w.Origin
	}
	return v, true
}

// affecting are the earlier steps that can affect the failing one
// (places: writers and others, not those that name only other keys), on
// a long recording a sample of each place (pick), in order. The
// incident's earlier-step mutations and the regression variants both go
// to these steps.
func (g *gen) affecting() []int {
	var writers, others []int
	for j := 1; j < g.failing && j <= len(g.steps); j++ {
		switch g.place[j] {
		case PlaceWriter:
			writers = append(writers, j)
		case PlaceOther:
			others = append(others, j)
		}
	}
	out := slices.Concat(g.pick(writers), g.pick(others))
	slices.Sort(out)
	return out
}

// pickSteps is how many earlier steps of one place get field mutations
// at most, per variant of the budget: a long recording has many more
// earlier steps than the budget has room for (the budget keeps one
// mutation of a step's field before any gets a second), and making every
// step's mutations took most of the time of generating.
const pickSteps = 1

// pick is at most pickSteps × the budget of steps, in order; all of them
// when they are fewer. The steps kept are those first in one order of all
// the steps, shuffled by the seed: a step picked for the regression
// variants is picked for the incident's too, and its mutations are made
// once.
func (g *gen) pick(steps []int) []int {
	n := pickSteps * g.opts.Budget
	if len(steps) <= n {
		return steps
	}
	if g.rank == nil {
		order := make([]int, len(g.steps)+1)
		for i := range order {
			order[i] = i
		}
		rng := rand.New(rand.NewPCG(g.opts.Seed, 0x7069636b))
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		g.rank = make([]int, len(order))
		for r, step := range order {
			g.rank[step] = r
		}
	}
	out := slices.Clone(steps)
	slices.SortFunc(out, func(a, b int) int { return g.rank[a] - g.rank[b] })
	out = out[:n]
	slices.Sort(out)
	return out
}

// regression makes the regression variants: each earlier step's fields
// mutated, or its request put on keys of other types and given the other
// choices of its grammar; the recording cut before the failing step (kept
// whole when there is no failing step: a contract). Only the earlier
// steps that can affect the failing one get them (affecting), as they
// get the incident's other mutations; every step of a contract does (with
// no failing request, no step is placed out).
func (g *gen) regression() []Variant {
	var out []Variant
	cut := len(g.events)
	if span, ok := g.span[g.failing]; ok {
		cut = span[0] // the failing request's index
	}
	picked := g.affecting()
	out = make([]Variant, 0, 16*len(picked))
	for _, j := range picked {
		for _, m := range g.fieldMutations(j, false) {
			v := g.mutated(j, m, "regression: step %d: %s", true)
			v.group, v.Kind, v.Place = m.group, "regression", PlaceRegression
			v.build = cutBefore(v.build, cut, g.failing-1)
			out = g.add(out, v)
		}
		// Keys of other types and the grammar's other choices; the
		// failing request's own kinds (siblings, values, scripts) stay
		// with it.
		for _, sub := range g.substitutions(j, false) {
			v := g.substituted(j, sub.Substitution, fmt.Sprintf("regression: step %d: %s", j, sub.What), true)
			v.group, v.Kind, v.Place = fmt.Sprintf("step %d %s", j, sub.kind), "regression", PlaceRegression
			v.build = cutBefore(v.build, cut+len(sub.Setup), g.failing-1+len(sub.Setup))
			out = g.add(out, v)
		}
	}
	return g.readBacks(g.modeRegressions(out, picked, cut), cut)
}

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

// mutation is a request with one change, what the change was, and which
// part of the request it changed. An earlier step's mutations are made
// lazily: build makes the request and describe what changed, and id
// tells the mutation from the step's others (the field and its new
// value, or the field removed), so that no request is built, and no
// description written, for a variant the budget does not keep.
type mutation struct {
	request  []byte
	what     string
	group    string
	build    func() []byte
	describe func() string
	id       string
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
	m := g.makeFieldMutations(n, all)
	if !all {
		g.mutations[n] = m
	}
	return m
}

// fieldsOf is step n's request and its fields as the variator splits
// them; false when the request did not parse or does not split.
func (g *gen) fieldsOf(n int) (req kavach.Event, kind string, fields []kavach.Field, ok bool) {
	req = g.steps[n-1].Request
	if req.Flags&kavach.ParseError != 0 {
		return req, "", nil, false
	}
	kind, fields, ok = g.opts.Variator.Fields(req.Data, g.opts.Schema)
	return req, kind, fields, ok
}

// makeFieldMutations makes step n's field mutations, as fieldMutations
// describes them, every time it is called (fieldMutations keeps an
// earlier step's once made).
func (g *gen) makeFieldMutations(n int, all bool) []mutation {
	req, kind, fields, ok := g.fieldsOf(n)
	if !ok {
		return nil
	}
	// The failing request's mutations are built now (their bytes tell
	// duplicates, a removed flag and a grammar drop of it alike), unless
	// the request is so large that a copy per candidate would cost more
	// than exactCost bytes: then, as an earlier step's, they are built
	// lazily, told apart by the field and value they change (editID).
	eager := all && len(fields) <= exactFields && len(req.Data)*len(fields) <= exactCost
	if all && !eager {
		if g.wide == nil {
			g.wide = map[int][]kavach.Field{}
		}
		g.wide[n] = fields
	}
	vary := g.varied(n, len(fields))
	m := &fieldMutator{g: g, n: n, all: all, eager: eager, req: req, kind: kind, fields: fields, groups: make([]string, len(fields))}
	for i := range fields {
		m.groups[i] = "field " + strconv.Itoa(i)
		if !all {
			m.groups[i] = "step " + strconv.Itoa(n) + " field " + strconv.Itoa(i)
		}
	}
	for _, i := range vary {
		m.values(i)
	}
	m.removals(vary)
	if all {
		m.swaps(vary)
	}
	return m.out
}

// fieldMutator makes one request's field mutations (makeFieldMutations).
type fieldMutator struct {
	g      *gen
	n      int  // the step
	all    bool // the failing request: swaps too, and built now when eager
	eager  bool // built now, told apart by their bytes
	req    kavach.Event
	kind   string
	fields []kavach.Field
	groups []string // each field's group
	out    []mutation
}

// set adds the mutation that sets field i to value (from says where the
// value comes from, "" for none), unless value is the field's own.
func (m *fieldMutator) set(i int, value, from string) {
	g, fields := m.g, m.fields
	if value == fields[i].Value {
		return
	}
	describe := func() string {
		what := fmt.Sprintf("%s %s → %s", g.fieldName(i, fields[i]), quote(fields[i].Value), quote(value))
		if from != "" {
			what += ", " + from
		}
		return what
	}
	build := func() []byte {
		// In place and back, not on a copy: a wide request's fields
		// are many. Builds take turns (finish).
		old := fields[i].Value
		fields[i].Value = value
		defer func() { fields[i].Value = old }()
		return g.opts.Variator.Rebuild(m.req.Data, fields)
	}
	group := m.groups[i]
	if from != "" && strings.HasPrefix(from, "taken from") {
		group = "swap"
	}
	if m.eager {
		m.out = append(m.out, mutation{request: build(), what: describe(), group: group})
		return
	}
	m.out = append(m.out, mutation{group: group, build: build, describe: describe, id: strconv.Itoa(i) + "=" + value})
}

// values adds field i's mutations by its type: numbers to boundaries,
// neighbours, signs and huge values; strings to empty, long and the
// values seen; keys to a missing key and the keys seen; tokens to the
// other tokens; and a named field to the other types the recording
// shows it with.
func (m *fieldMutator) values(i int) {
	g, f := m.g, m.fields[i]
	switch f.Type {
	case kavach.FieldNumber:
		for _, v := range numbers(f.Value) {
			m.set(i, v, "")
		}
	case kavach.FieldString:
		// Empty and long first: the boundaries; then values seen.
		m.set(i, "", "")
		m.set(i, strings.Repeat("x", 4096), "")
		for _, s := range g.strings {
			m.set(i, s, "a value seen in the recording")
		}
	case kavach.FieldKey:
		missing, other := g.keyWords()
		m.set(i, MissingKey, missing)
		for _, k := range g.keys {
			m.set(i, k, other)
		}
	case kavach.FieldToken:
		for _, t := range f.Alternatives {
			m.set(i, t, "")
		}
	}
	// A named field (a query parameter, a JSON field) the recording
	// shows as a number in another request of its kind is varied as
	// a number too, and one it shows as text, as text.
	if f.Key == "" || (f.Type != kavach.FieldNumber && f.Type != kavach.FieldString) {
		return
	}
	for _, seen := range g.typedAs(m.kind, f.Key) {
		if seen.typ == f.Type {
			continue
		}
		from := fmt.Sprintf("typed as at step %d", seen.step)
		if seen.typ == kavach.FieldNumber {
			for _, v := range numbers(seen.value) {
				m.set(i, v, from)
			}
		} else {
			m.set(i, "", from)
			m.set(i, seen.value, from)
		}
	}
}

// removals adds the mutations that remove one of the fields vary.
func (m *fieldMutator) removals(vary []int) {
	g, fields := m.g, m.fields
	removed := "removed"
	if !m.all {
		removed = "step " + strconv.Itoa(m.n) + " removed"
	}
	for _, i := range vary {
		describe := func() string { return fmt.Sprintf("%s %s removed", g.fieldName(i, fields[i]), quote(fields[i].Value)) }
		build := func() []byte { return g.opts.Variator.Rebuild(m.req.Data, slices.Delete(slices.Clone(fields), i, i+1)) }
		switch {
		case m.eager:
			m.out = append(m.out, mutation{request: build(), what: describe(), group: removed})
		case m.all:
			// Removing any field of a run of equal ones makes the same
			// request: the run's first names them all.
			m.out = append(m.out, mutation{group: removed, build: build, describe: describe, id: "-" + strconv.Itoa(runStart(fields, i))})
		default:
			m.out = append(m.out, mutation{group: removed, build: build, describe: describe, id: "-" + strconv.Itoa(i)})
		}
	}
}

// swaps adds, for each field of vary, the mutations that set it to the
// same field's value in another request of the same kind and shape.
func (m *fieldMutator) swaps(vary []int) {
	for _, s := range m.g.steps {
		if s.N == m.n {
			continue
		}
		k2, f2, ok := m.g.opts.Variator.Fields(s.Request.Data, m.g.opts.Schema)
		if !ok || k2 != m.kind || len(f2) != len(m.fields) {
			continue
		}
		for _, i := range vary {
			m.set(i, f2[i].Value, fmt.Sprintf("taken from step %d", s.N))
		}
	}
}

// pickFields is how many fields of one request get field mutations at
// most, per variant of the budget. The budget keeps one mutation of a
// field before any field gets a second, and a request of thousands of
// arguments has far more fields than it has room for; the fields kept
// are a sample by the seed, as a uniform draw of the fields the budget
// keeps would be.
const pickFields = 4

// exactFields and exactCost bound what the failing request's mutations
// are built with before the budget chooses: its number of fields (each
// candidate copies them all), and its size times that number. Within
// both, each candidate is built and told from the others by its bytes;
// past either, each is told by the field and value it changes and built
// only when kept, so that generating stays linear in the request's size.
// Variables only so that a test can compare both ways on one request.
var (
	exactFields = 64
	exactCost   = 1 << 20
)

// varied are the indexes of the fields of step n's request (of count
// fields) that get mutations: all of them when they are at most
// pickFields × the budget, else that many drawn by the seed (and the
// step), in order.
func (g *gen) varied(n, count int) []int {
	k := pickFields * g.opts.Budget
	if count <= k {
		out := make([]int, count)
		for i := range out {
			out[i] = i
		}
		return out
	}
	rng := rand.New(rand.NewPCG(g.opts.Seed, 0x6669656c64^uint64(n)))
	out := rng.Perm(count)[:k]
	slices.Sort(out)
	return out
}

// runStart is the first field of the run of fields equal to field i.
func runStart(fields []kavach.Field, i int) int {
	for i > 0 && sameField(fields[i-1], fields[i]) {
		i--
	}
	return i
}

func sameField(a, b kavach.Field) bool {
	return a.Value == b.Value && a.Key == b.Key && a.Name == b.Name && a.Type == b.Type
}

// edited is the incident with step n's request mutated by m, made
// lazily and told from the others by what m changes (editKey): a wide
// request's mutation.
func (g *gen) edited(n int, m mutation) Variant {
	v := Variant{key: editKey(n, false, nil, m.id)}
	v.describe = func() string { return fmt.Sprintf("step %d: %s", n, m.describe()) }
	v.build = func() ([]kavach.Event, []int) {
		return g.withRequest(n, m.build(), "", false).build()
	}
	return v
}

// editKey tells a variant that sets (or removes) one field of step n's
// request, after inserting setup, from every other such variant.
func editKey(n int, regression bool, setup [][]byte, id string) [32]byte {
	return lazyKey(n, regression, setup, []byte("\x00edit|"+id))
}

// subKey tells a substitution of step n's request from the others: by
// its bytes, as lazyKey does; on a wide request, by the field it sets or
// removes when it is such an edit (editID), as that field's mutation is;
// and a substitution whose request is left to be made (Request nil) by
// its Edit.
func (g *gen) subKey(n int, regression bool, sub kavach.Substitution) [32]byte {
	if id, ok := g.editID(n, sub); ok {
		return editKey(n, regression, sub.Setup, id)
	}
	return lazyKey(n, regression, sub.Setup, g.subRequest(n, sub))
}

// editID says which one field sub sets, or removes, of step n's request,
// as makeFieldMutations names the mutation that does the same ("3=x",
// "-3"): for a substitution that says so (Edit) on a wide request, or
// on an earlier step when its request is left to be made (the failing
// request's, not wide, are told by their bytes, as its mutations are:
// subRequest makes it); for another on a wide request, when
// splitting it into fields shows one field changed or removed, and
// rebuilding the request so gives its bytes.
func (g *gen) editID(n int, sub kavach.Substitution) (string, bool) {
	fields, wide := g.wide[n]
	if sub.Edit != nil && (wide || sub.Request == nil && n != g.failing) {
		return strconv.Itoa(sub.Edit.Field) + "=" + sub.Edit.Value, true
	}
	if !wide || sub.Request == nil {
		return "", false
	}
	_, got, ok := g.opts.Variator.Fields(sub.Request, g.opts.Schema)
	if !ok {
		return "", false
	}
	same := func(a, b kavach.Field) bool { return a.Value == b.Value && a.Key == b.Key }
	i := 0
	for i < len(got) && i < len(fields) && same(got[i], fields[i]) {
		i++
	}
	var id string
	var edited []kavach.Field
	switch {
	case len(got) == len(fields) && i < len(got) && slices.EqualFunc(got[i+1:], fields[i+1:], same):
		edited = slices.Clone(fields)
		edited[i].Value = got[i].Value
		id = strconv.Itoa(i) + "=" + got[i].Value
	case len(got) == len(fields)-1 && slices.EqualFunc(got[i:], fields[i+1:], same):
		edited = slices.Delete(slices.Clone(fields), i, i+1)
		id = "-" + strconv.Itoa(runStart(fields, i))
	default:
		return "", false
	}
	if !bytes.Equal(g.opts.Variator.Rebuild(g.steps[n-1].Request.Data, edited), sub.Request) {
		return "", false
	}
	return id, true
}

// subRequest is sub's request, made now when the Variator left it to be
// made (Request nil, Edit set).
func (g *gen) subRequest(n int, sub kavach.Substitution) []byte {
	if sub.Request != nil || sub.Edit == nil {
		return sub.Request
	}
	req := g.steps[n-1].Request.Data
	_, fields, ok := g.opts.Variator.Fields(req, g.opts.Schema)
	if !ok || sub.Edit.Field < 0 || sub.Edit.Field >= len(fields) {
		return req
	}
	fields[sub.Edit.Field].Value = sub.Edit.Value
	return g.opts.Variator.Rebuild(req, fields)
}

// fieldName names field i in the protocol's words (Variation.FieldName), else as an
// argument.
func (g *gen) fieldName(i int, f kavach.Field) string {
	if name := g.opts.Variator.FieldName; name != nil {
		return name(i, f)
	}
	return argName(i, f)
}

// keyWords are the protocol's words for a missing and another key.
func (g *gen) keyWords() (missing, other string) {
	if words := g.opts.Variator.KeyWords; words != nil {
		return words()
	}
	return "a key that does not exist", "another recorded key"
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
	// The recorded value's next comes second: the nearest other input of
	// the same shape (another id, another length), which a fix of the
	// recorded input alone gets wrong.
	out := []string{"0", strconv.FormatInt(n+1, 10), "1", "-1"}
	for _, x := range []int64{n - 1, -n, n * 2, n / 2} {
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

// variant wraps events, a slice of its own, as a variant: every step's
// origin is found by its request's sequence number (0 for a new event),
// then the events are numbered afresh from 1.
func (g *gen) variant(events []kavach.Event, what string, regression bool) Variant {
	if g.orig == nil {
		g.orig = make(map[uint64]int, len(g.steps))
		for _, s := range g.steps {
			g.orig[s.Request.Seq] = s.N
		}
	}
	origin := make([]int, 0, len(g.steps)+1)
	for i, ev := range events {
		if ev.Dir == kavach.Request {
			origin = append(origin, g.orig[ev.Seq])
		}
		events[i].Seq = uint64(i + 1)
	}
	return Variant{Description: what, Regression: regression, Events: events, Origin: origin}
}

// mutated is the incident with step n's request mutated by m (made now
// or lazily), described by format with n and what m changed.
func (g *gen) mutated(n int, m mutation, format string, regression bool) Variant {
	if m.build == nil {
		return g.withRequest(n, m.request, fmt.Sprintf(format, n, m.what), regression)
	}
	b := make([]byte, 0, 32+len(m.id))
	b = append(b, "lazy|"...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = strconv.AppendBool(append(b, '|'), regression)
	b = append(append(b, '|'), m.id...)
	v := Variant{Regression: regression, key: sha256.Sum256(b)}
	v.describe = func() string { return fmt.Sprintf(format, n, m.describe()) }
	v.build = func() ([]kavach.Event, []int) {
		events := slices.Clone(g.events)
		i := g.span[n][0]
		events[i].Data = m.build()
		events[i].Flags &^= kavach.Redacted
		w := g.variant(events, "", false)
		return w.Events, w.Origin
	}
	return v
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
	block := slices.Clone(g.span[g.failing])
	conn := g.steps[g.failing-1].Conn()
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
	return g.variant(events, fmt.Sprintf("step %d (%s) moved before step %d", g.failing, g.describe(g.failing), j), false)
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
