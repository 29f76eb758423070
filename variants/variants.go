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
