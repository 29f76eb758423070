package grade

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/replay"
)

// SliceEvidence is the dependency slice a long recording's variants
// were made from and replayed (docs/diff.md, "Long recordings"): the
// steps the failing request depends on by its keys, transitively, and
// the connections' state-setting steps, in recorded order. The old build
// failed it the recorded way before any variant was made of it.
type SliceEvidence struct {
	Steps int `json:"steps"`
	// First is the slice's first step (the fixture's number); the last
	// is the failing step.
	First int `json:"first"`
	// Keys are the keys the slice follows, sorted, at most sliceKeysListed
	// of KeysTotal.
	Keys      []string `json:"keys"`
	KeysTotal int      `json:"keys_total"`
	// State are the steps in it for the state they set (SELECT, AUTH,
	// SCRIPT LOAD, ...), Unknown those in it because their keys or writes
	// are unknown (a script naming no key, FLUSHALL).
	State   int `json:"state_steps,omitempty"`
	Unknown int `json:"unknown_steps,omitempty"`
}

// String is the slice for a person: "12 steps from step 40 (keys a, b)".
func (s *SliceEvidence) String() string {
	keys := strings.Join(s.Keys, ", ")
	if more := s.KeysTotal - len(s.Keys); more > 0 {
		keys += fmt.Sprintf(" and %d more", more)
	}
	if keys == "" {
		keys = "none"
	}
	out := fmt.Sprintf("%d steps from step %d (keys: %s", s.Steps, s.First, keys)
	if s.State > 0 {
		out += fmt.Sprintf("; %d state-setting steps", s.State)
	}
	if s.Unknown > 0 {
		out += fmt.Sprintf("; %d steps of unknown keys", s.Unknown)
	}
	return out + ")"
}

const sliceKeysListed = 20

// sliceMax is the most steps a dependency slice may have before its
// variants fall back to the window: five times the window's half-width
// (5,000 steps by default), so that the variants' replays stay of the
// window's order of cost.
func sliceMax(window int) int { return 5 * window }

// Flags of a step, for the slice.
const (
	keysUnknown   = 1 << iota // may read any key
	writesUnknown             // may write any key
	connState                 // sets its connection's state
	serverState               // sets the server's state
)

// stepKeys are the keys of every step up to the failing one, packed: a
// few bytes a step beside its keys' bytes, for a recording of millions.
type stepKeys struct {
	conn  []uint64
	flag  []uint8
	end   []uint32 // per step, the end of its keys in kend
	kend  []uint32 // per key, the end of its bytes in buf
	wrote []bool   // per key, whether the step writes it
	buf   []byte
}

func (k *stepKeys) add(conn uint64, flag uint8, keys, writes []string) bool {
	switch {
	case keys == nil && writes == nil:
		flag |= keysUnknown | writesUnknown
	case keys == nil:
		flag |= keysUnknown
		if len(writes) > 0 {
			flag |= writesUnknown // a write of unnamed keys
		}
	}
	for _, key := range keys {
		k.buf = append(k.buf, key...)
		if len(k.buf) > math.MaxUint32 || len(k.kend) >= math.MaxUint32 {
			return false
		}
		k.kend = append(k.kend, uint32(len(k.buf)))
		k.wrote = append(k.wrote, writes == nil || slices.Contains(writes, key))
	}
	k.conn = append(k.conn, conn)
	k.flag = append(k.flag, flag)
	k.end = append(k.end, uint32(len(k.kend)))
	return true
}

// keysOf is step n's keys (from 1), each with whether it writes it.
func (k *stepKeys) each(n int, fn func(key string, wrote bool)) {
	from := uint32(0)
	if n > 1 {
		from = k.end[n-2]
	}
	for j := from; j < k.end[n-1]; j++ {
		start := uint32(0)
		if j > 0 {
			start = k.kend[j-1]
		}
		fn(string(k.buf[start:k.kend[j]]), k.wrote[j])
	}
}

// learnStepKeys asks a fresh old build the keys of every step up to and
// including step last, a batch at a time, in one pass over the
// recording. why says what is missing when it cannot.
func learnStepKeys(ctx context.Context, rec *recording, last int, old kavach.Launch, opts Options) (*stepKeys, string) {
	finder := opts.Integration.Abilities().Keys
	if finder == nil {
		return nil, "the integration cannot tell a request's keys"
	}
	setter := opts.Integration.Abilities().SetsState
	if !opts.Pool.acquire(ctx) {
		return nil, ctx.Err().Error()
	}
	defer opts.Pool.release()
	p, err := opts.Integration.Start(ctx, old)
	if err != nil {
		return nil, "the old build did not start to tell the keys: " + err.Error()
	}
	defer p.Stop()
	const batch = 2048
	// Sized for the steps at once: grown by doubling, a long recording's
	// would hold twice what it needs at its peak.
	k := &stepKeys{conn: make([]uint64, 0, last), flag: make([]uint8, 0, last), end: make([]uint32, 0, last),
		kend: make([]uint32, 0, last), wrote: make([]bool, 0, last)}
	var reqs [][]byte
	var conns []uint64
	var flags []uint8
	full := false
	flush := func() {
		keys, writes, _ := finder(ctx, p.Addr(), reqs)
		for i := range reqs {
			var w []string
			if i < len(writes) {
				w = writes[i]
			}
			var ks []string
			if i < len(keys) {
				ks = keys[i]
			}
			if !k.add(conns[i], flags[i], ks, w) {
				full = true
			}
		}
		reqs, conns, flags = reqs[:0], conns[:0], flags[:0]
	}
	err = rec.EachStep(func(s kavach.Step) error {
		if s.N > last || full {
			return errStop
		}
		var f uint8
		if setter != nil {
			switch setter(s.Request.Data) {
			case kavach.ConnState:
				f = connState
			case kavach.ServerState:
				f = serverState
			}
		}
		reqs = append(reqs, bytes.Clone(s.Request.Data))
		conns, flags = append(conns, s.Conn()), append(flags, f)
		if len(reqs) == batch {
			flush()
		}
		return ctx.Err()
	})
	if err != nil && err != errStop {
		return nil, err.Error()
	}
	flush()
	if full {
		return nil, "too many keys to hold"
	}
	if len(k.flag) < last {
		return nil, fmt.Sprintf("the keys of %d of %d steps were told", len(k.flag), last)
	}
	return k, ""
}

// keySet is keys that relate as kavach.KeysRelate relates them, asked
// about one key at a time: equal, or a path and one below it.
type keySet struct {
	exact map[string]bool
	above map[string]bool // paths with a key of the set below them
}

func newKeySet() *keySet { return &keySet{exact: map[string]bool{}, above: map[string]bool{}} }

// parents calls fn with every path above key ("/a" and "/a/" above "/a/b").
func parents(key string, fn func(string)) {
	if !strings.HasPrefix(key, "/") {
		return
	}
	for j := 1; j < len(key); j++ {
		if key[j-1] == '/' {
			fn(key[:j])
		}
		if key[j] == '/' {
			fn(key[:j])
		}
	}
}

func (s *keySet) add(key string) {
	s.exact[key] = true
	parents(key, func(p string) { s.above[p] = true })
}

func (s *keySet) relates(key string) bool {
	if s.exact[key] || s.above[key] {
		return true
	}
	found := false
	parents(key, func(p string) { found = found || s.exact[p] })
	return found
}

// dependencySlice is the steps step f depends on, from the keys of every
// step up to it, in order: f itself; going back from it, every step that
// writes a key the steps already in the slice touch (a writer's own keys,
// those it reads too, join them: what it wrote depends on them); every
// step whose writes are unknown (it may have written any of them); and
// the state-setting steps of the server, and of every connection with a
// later step in the slice. Once a step of unknown keys is in the slice
// (it may read any key), every earlier step that writes joins it. ok is
// false when the slice would have more than max steps.
func dependencySlice(k *stepKeys, f, max int) (steps []int, ev SliceEvidence, ok bool) {
	need := newKeySet()
	all := false
	conns := map[uint64]bool{}
	take := func(n int) {
		steps = append(steps, n)
		conns[k.conn[n-1]] = true
		if k.flag[n-1]&keysUnknown != 0 {
			all = true
		}
		k.each(n, func(key string, _ bool) { need.add(key) })
		switch {
		case k.flag[n-1]&(connState|serverState) != 0:
			ev.State++
		case k.flag[n-1]&(keysUnknown|writesUnknown) != 0 && n != f:
			ev.Unknown++
		}
	}
	take(f)
	for n := f - 1; n >= 1; n-- {
		fl := k.flag[n-1]
		in := fl&serverState != 0 || fl&connState != 0 && conns[k.conn[n-1]] || fl&writesUnknown != 0
		if !in {
			k.each(n, func(key string, wrote bool) { in = in || wrote && (all || need.relates(key)) })
		}
		if in {
			if len(steps) == max {
				return nil, SliceEvidence{Steps: max + 1}, false
			}
			take(n)
		}
	}
	slices.Reverse(steps)
	ev.Steps, ev.First = len(steps), steps[0]
	for key := range need.exact {
		ev.Keys = append(ev.Keys, key)
	}
	sort.Strings(ev.Keys)
	ev.KeysTotal = len(ev.Keys)
	if len(ev.Keys) > sliceKeysListed {
		ev.Keys = ev.Keys[:sliceKeysListed]
	}
	return steps, ev, true
}

// cutSlice is the steps of a long recording (their fixture numbers, in
// order) cut out as a recording of their own: a connection is opened
// where the slice first uses it, and closed where the recording closed it.
func cutSlice(src replay.Source, codec kavach.Integration, steps []int) (*window, error) {
	in := make(map[int]bool, len(steps))
	for _, n := range steps {
		in[n] = true
	}
	w := &window{first: steps[0], last: steps[len(steps)-1], orig: steps}
	if err := w.cut(src, codec, func(n int) bool { return in[n] }, nil); err != nil {
		return nil, err
	}
	if len(w.steps) != len(steps) {
		return nil, fmt.Errorf("grade: the dependency slice of %d steps cut into %d", len(steps), len(w.steps))
	}
	return w, nil
}

// sliceFor is the dependency slice of a long recording's failing step
// f, verified: the old build replays it and fails it the recorded way
// at f (answer is the recording's answer there, failsByAnswer). Nil, and
// why, when there is none to use: the variants then use the window.
func sliceFor(ctx context.Context, rec *recording, f kavach.Failure, old kavach.Launch, ropts replay.Options, answer kavach.Outcome, opts Options) (*window, string) {
	k, why := learnStepKeys(ctx, rec, f.Step, old, opts)
	if k == nil {
		return nil, "no dependency slice: " + why
	}
	max := sliceMax(opts.Window)
	steps, ev, ok := dependencySlice(k, f.Step, max)
	if !ok {
		return nil, fmt.Sprintf("the dependency slice has more than %d steps", max)
	}
	w, err := cutSlice(rec.src, opts.Integration, steps)
	if err != nil {
		return nil, "no dependency slice: " + err.Error()
	}
	w.slice = &ev
	w.keys = make([][]string, len(steps))
	for i, n := range steps {
		if k.flag[n-1]&keysUnknown != 0 {
			continue
		}
		w.keys[i] = []string{}
		k.each(n, func(key string, _ bool) { w.keys[i] = append(w.keys[i], key) })
	}
	// Observed: the old build must fail the slice the recorded way.
	if !opts.Pool.acquire(ctx) {
		return nil, ctx.Err().Error()
	}
	tr, _, err := opts.Memo.replay(ctx, opts.memoScope, old, w.events, ropts, nil)
	opts.Pool.release()
	if err != nil {
		return nil, "the old build did not replay the dependency slice: " + err.Error()
	}
	inv := checkInvariants(opts.Invariants, opts.Integration, tr, "")
	local := len(steps)
	var s replay.StepResult
	if local <= len(tr.Steps) {
		s = tr.Steps[local-1]
	}
	switch {
	case !s.Ran:
		return nil, fmt.Sprintf("the old build did not reach step %d replaying the dependency slice (%s)", f.Step, ev.String())
	case !recurs(f, s.Outcome, inv.violated[local]) && !failsByAnswer(f, answer, s.Outcome, inv.applied[local]):
		return nil, fmt.Sprintf("the old build does not fail the dependency slice (%s) the recorded way at step %d: %s",
			ev.String(), f.Step, describeOutcome(s.Outcome))
	}
	return w, ""
}
