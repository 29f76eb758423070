package grade

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/replay"
	"github.com/kavach-dev/kavach/variants"
)

// DefaultCheckpointSteps is how many steps must come before the step a
// variant changes for it to start from a checkpoint (Options.
// CheckpointSteps): below it, the checkpoint and its check cost more
// than the steps they spare.
const DefaultCheckpointSteps = 20

// checkSteps is how many steps from a checkpoint on a build started
// from it must answer as the build that replayed the steps before it
// did, for the checkpoint to be used (docs/variants.md, "Checkpoints").
const checkSteps = 20

// minSharers is how many variants must start from a checkpoint for it
// to be made: one costs the steps before it twice more on each build.
const minSharers = 2

// checkpoints are the states the variants of one recording start from
// (docs/variants.md, "Checkpoints"): for each build, the state it
// holds after replaying the recording's steps before a step, saved by
// the build itself (replay.Checkpoint) and checked before use. A
// variant that leaves the steps before that step as recorded replays
// only its own steps from it on, on a build started from that state;
// its trace is the checkpoint's answers to the steps before, then its
// own. Nil when no variant starts from one.
type checkpoints struct {
	base   []kavach.Event // the recording the variants were made from
	origin []int          // base's steps: 1, 2, ...
	codec  kavach.Integration
	ropts  replay.Options
	stepOf func(int) int // names base's steps by the fixture's; nil: same
	// reads are base's steps that read keys and write none (probeSteps),
	// each with its answer: what the check sends again to read the state.
	reads []kavach.Step
	dir   string
	// from is, by variant (its index in the list), the step of the
	// checkpoint it starts from; 0: it replays every step.
	from []int
	mu   sync.Mutex
	at   map[checkpointKey]*checkpoint
}

type checkpointKey struct {
	role string // "old" or "new"
	step int
}

// checkpoint is one build's state before one step.
type checkpoint struct {
	once   sync.Once
	prefix []kavach.Event      // base's events before the step
	seed   *kavach.Seed        // the saved state; nil when not used
	steps  []replay.StepResult // the build's answers to the steps before
	why    string              // why it is not used; "" when it is
	used   atomic.Int64        // variants started from it
}

// newCheckpoints plans the checkpoints of vs, variants of base
// (planCheckpoints), from the step each variant changes first (a clock
// variant: the step its clock moves from, at the latest) where at least
// opts.CheckpointSteps steps come before it. Variants that hand one
// build's state to another (they start from a saved state already)
// replay every step. Nil when a build's state cannot be saved (neither
// a data file the integration saves nor a state directory the builds
// start from: replay.CanCheckpoint), checkpoints are turned off
// (Options.NoCheckpoints), or no variant would start from one.
func newCheckpoints(base []kavach.Event, vs []variants.Variant, keys, writes [][]string, ropts replay.Options, opts Options) *checkpoints {
	if opts.NoCheckpoints || !replay.CanCheckpoint(opts.Integration, ropts.Seed) || len(vs) < minSharers {
		return nil
	}
	least := opts.CheckpointSteps
	if least <= 0 {
		least = DefaultCheckpointSteps
	}
	steps := len(kavach.Steps(base, opts.Integration))
	if steps <= least {
		return nil // no step has enough before it
	}
	changes := make([]int, len(vs))
	for i := range vs {
		if vs[i].HandOff > 0 {
			continue
		}
		events, _ := vs[i].Build()
		k := changedStep(base, events)
		if k == 0 {
			k = steps // the recording's steps, the clock moved (below)
		}
		if vs[i].ShiftFrom > 0 {
			k = min(k, vs[i].ShiftFrom) // the clock moves from there on
		}
		// A step past the recording's last (a variant that adds one at
		// the end) starts from the state before the last.
		if k = min(k, steps); k > least {
			changes[i] = k
		}
	}
	from := planCheckpoints(changes)
	if !slices.ContainsFunc(from, func(c int) bool { return c > 0 }) {
		return nil
	}
	origin := make([]int, steps)
	for i := range origin {
		origin[i] = i + 1
	}
	return &checkpoints{base: base, origin: origin, codec: opts.Integration, ropts: ropts, stepOf: opts.stepOf, from: from,
		reads: probeSteps(base, keys, writes, opts.Integration), at: map[checkpointKey]*checkpoint{}}
}

// maxProbes is the most reads a checkpoint's check sends again after its
// steps (withProbes).
const maxProbes = 20

// probeSteps are the steps of base that only read (keys named and known,
// the keys they write none, setting no state: GET) and were answered
// before the next step was sent (none that waited), each with its answer.
// A request that names no key (INFO, CLIENT LIST, PING) says nothing of
// the data and much that differs from one start of a build to the next.
func probeSteps(base []kavach.Event, keys, writes [][]string, codec kavach.Integration) []kavach.Step {
	if writes == nil {
		return nil
	}
	setsState := codec.Abilities().SetsState
	steps := kavach.Steps(base, codec)
	var out []kavach.Step
	for i, st := range steps {
		switch {
		case i >= len(keys) || i >= len(writes) || len(keys[i]) == 0 || writes[i] == nil || len(writes[i]) > 0:
		case setsState != nil && setsState(st.Request.Data) != kavach.NoState:
		case len(st.Responses) == 0 || st.Closed:
		case i+1 < len(steps) && st.Responses[len(st.Responses)-1].Seq > steps[i+1].Request.Seq:
		default:
			out = append(out, st)
		}
	}
	return out
}

// withProbes is events (the steps through the check's last) with the
// latest maxProbes distinct reads before step (c.reads) sent again after
// them, on a connection of their own, at the time of the last event; and,
// for each read, the step it was at. The state a checkpoint leaves is so
// read as the recording read it, and the check sees what its own steps
// do not read (a value the build's restore loses, a field its own data
// file drops). Both of the check's replays end with them.
func (c *checkpoints) withProbes(events []kavach.Event, step int) ([]kavach.Event, []int) {
	var probes []kavach.Step
	seen := map[string]bool{}
	for i := len(c.reads) - 1; i >= 0 && len(probes) < maxProbes; i-- {
		r := c.reads[i]
		if r.N < step && !seen[string(r.Request.Data)] {
			seen[string(r.Request.Data)] = true
			probes = append(probes, r)
		}
	}
	if len(probes) == 0 || len(events) == 0 {
		return events, nil
	}
	slices.Reverse(probes)
	conn, seq := uint64(0), uint64(0)
	for _, ev := range events {
		conn, seq = max(conn, ev.Conn), max(seq, ev.Seq)
	}
	conn++
	at := events[len(events)-1].Offset
	out := slices.Clone(events)
	add := func(dir kavach.Direction, data []byte) {
		seq++
		out = append(out, kavach.Event{Seq: seq, Conn: conn, Dir: dir, Offset: at, Data: data})
	}
	add(kavach.Open, nil)
	for _, p := range probes {
		add(kavach.Request, p.Request.Data)
		for _, r := range p.Responses {
			add(kavach.Response, r.Data)
		}
	}
	add(kavach.Close, nil)
	origin := make([]int, len(probes))
	for i, p := range probes {
		origin[i] = p.N
	}
	return out, origin
}

// planCheckpoints chooses, from the step each variant changes first
// (changes; 0: none to start from), the steps of the checkpoints and
// returns the one each variant starts from (0: none): the latest chosen
// step at or before its own. A checkpoint before step c costs about two
// replays of the c-1 steps before it on each build (the replay saved,
// and the one its check compares with); each variant starting from it
// spares the steps between the checkpoint it would start from otherwise
// and c. Steps are chosen one at a time, the one sparing the most steps
// net first, while one spares any (and has minSharers variants).
func planCheckpoints(changes []int) []int {
	var cands []int
	for _, k := range changes {
		if k > 0 && !slices.Contains(cands, k) {
			cands = append(cands, k)
		}
	}
	slices.Sort(cands)
	from := make([]int, len(changes))
	for {
		best, bestNet := 0, 0
		for _, c := range cands {
			spared, users := 0, 0
			for i, k := range changes {
				if from[i] < c && c <= k {
					spared += c - from[i]
					users++
				}
			}
			if net := spared - 2*(c-1); users >= minSharers && net > bestNet {
				best, bestNet = c, net
			}
		}
		if best == 0 {
			return from
		}
		for i, k := range changes {
			if from[i] < best && best <= k {
				from[i] = best
			}
		}
	}
}

// changedStep is the first step of events (a variant of base) whose
// events differ from base's, counting from 1; when what differs first
// is not a request (a connection opened elsewhere), the step before it.
// 0 when events are base.
func changedStep(base, events []kavach.Event) int {
	steps := 0 // the requests before i: each starts a step
	for i, ev := range events {
		if i >= len(base) || !sameEvent(ev, base[i]) {
			if ev.Dir == kavach.Request {
				return steps + 1
			}
			return steps
		}
		if ev.Dir == kavach.Request {
			steps++
		}
	}
	if len(events) < len(base) {
		return steps
	}
	return 0
}

// sameEvent reports whether a and b are one event of a recording, but
// for their place in its order (Seq: a variant numbers its own).
func sameEvent(a, b kavach.Event) bool {
	return a.Conn == b.Conn && a.Dir == b.Dir && a.Flags == b.Flags && a.Offset == b.Offset && bytes.Equal(a.Data, b.Data)
}

// close removes the saved states.
func (c *checkpoints) close() {
	if c != nil && c.dir != "" {
		os.RemoveAll(c.dir)
	}
}

// replayFunc replays events on a build (runRetry, or from a checkpoint).
type replayFunc func(ctx context.Context, l kavach.Launch, events []kavach.Event, ropts replay.Options) (*replay.Trace, error)

// runner is how the variant with index i in the list (or one of its
// alternates) is replayed on the build playing role ("old" or "new"):
// from its checkpoint when it has one that passed its check and the
// events before it are the recording's, else every step (runRetry).
// Either way the trace has a result for every step of the events.
func (c *checkpoints) runner(i int) func(role string) replayFunc {
	if c == nil || i >= len(c.from) || c.from[i] == 0 {
		return nil
	}
	step := c.from[i]
	return func(role string) replayFunc {
		return func(ctx context.Context, l kavach.Launch, events []kavach.Event, ropts replay.Options) (*replay.Trace, error) {
			return c.run(ctx, role, step, l, events, ropts)
		}
	}
}

// run replays events on l, playing role, from the checkpoint before
// step (runner).
func (c *checkpoints) run(ctx context.Context, role string, step int, l kavach.Launch, events []kavach.Event, ropts replay.Options) (*replay.Trace, error) {
	cp := c.get(ctx, role, l, step)
	if cp.seed == nil {
		return runRetry(ctx, l, events, ropts)
	}
	var own []int // the variant's steps: 1, 2, ...
	for _, ev := range events {
		if ev.Dir == kavach.Request {
			own = append(own, len(own)+1)
		}
	}
	sp, err := splitAt(events, own, step, c.codec)
	if err != nil || !slices.EqualFunc(sp.prefix, cp.prefix, sameEvent) {
		return runRetry(ctx, l, events, ropts)
	}
	if shift := ropts.Shift; shift != nil {
		// A clock variant's shift is counted in its own steps.
		ropts.Shift = func(n int) time.Duration {
			if n-1 < len(sp.origin) {
				return shift(sp.origin[n-1])
			}
			return shift(n)
		}
	}
	ropts.Seed = cp.seed
	tr, err := runRetry(ctx, l, sp.suffix, ropts)
	if err != nil {
		return tr, err
	}
	cp.used.Add(1)
	return splice(tr, cp.steps, sp, step), nil
}

// splice is the trace of a whole replay made of before, a build's
// answers to the prefix of sp (split at step), and tr, its replay of
// sp's suffix from the state saved there: each step numbered as the
// events split were, the set-up steps sent again dropped, and a step
// moved to the suffix (a client waiting across the cut) in its place.
func splice(tr *replay.Trace, before []replay.StepResult, sp split, step int) *replay.Trace {
	out := *tr
	out.Steps = make([]replay.StepResult, 0, len(before)+len(tr.Steps))
	add := func(s replay.StepResult, n int) {
		s.N = n
		out.Steps = append(out.Steps, s)
	}
	b, m := 0, 0
	for n := 1; n < step; n++ {
		if m < len(sp.moved) && sp.moved[m] == n {
			m++
			if j := slices.Index(sp.steps, n); j < len(tr.Steps) {
				add(tr.Steps[j], n)
			}
			continue
		}
		if b < len(before) {
			add(before[b], n)
			b++
		}
	}
	for j, n := range sp.steps {
		if n >= step && j < len(tr.Steps) {
			add(tr.Steps[j], n)
		}
	}
	return &out
}

// get is role's checkpoint before step, made and checked on first use.
func (c *checkpoints) get(ctx context.Context, role string, l kavach.Launch, step int) *checkpoint {
	c.mu.Lock()
	key := checkpointKey{role, step}
	cp := c.at[key]
	if cp == nil {
		cp = &checkpoint{}
		c.at[key] = cp
	}
	c.mu.Unlock()
	cp.once.Do(func() {
		if err := c.make(ctx, cp, role, l, step); err != nil {
			cp.seed, cp.why = nil, err.Error()
		}
	})
	return cp
}

// make saves l's state after the steps before step (replay.Checkpoint)
// and checks it (docs/variants.md, "Checkpoints"): l replays the steps
// through checkSteps after it from the start, and again from the saved
// state; every step must answer alike in both, the steps before it
// included. An error says why the checkpoint is not used.
func (c *checkpoints) make(ctx context.Context, cp *checkpoint, role string, l kavach.Launch, step int) error {
	name := c.name(step)
	c.mu.Lock()
	if c.dir == "" {
		dir, err := os.MkdirTemp("", "kavach-checkpoints-")
		if err != nil {
			c.mu.Unlock()
			return err
		}
		c.dir = dir
	}
	// One file per build and step: the old and the new build are often
	// both called redis-server.
	path := filepath.Join(c.dir, fmt.Sprintf("%s-%d", role, step))
	c.mu.Unlock()
	sp, err := splitAt(c.base, c.origin, step, c.codec)
	if err != nil {
		return err
	}
	cp.prefix = sp.prefix
	seed, saved, err := replay.Checkpoint(ctx, l, sp.prefix, c.ropts, path)
	if err != nil {
		return fmt.Errorf("the state before step %d could not be saved: %w", name, err)
	}
	last := min(step+checkSteps-1, len(c.origin))
	through, probes := c.withProbes(upTo(c.base, last, c.codec), step)
	whole, err := runRetry(ctx, l, through, c.ropts)
	if err != nil {
		return fmt.Errorf("checking the state before step %d: %w", name, err)
	}
	check, err := splitAt(through, c.origin[:last], step, c.codec)
	if err != nil {
		return err
	}
	ropts := c.ropts
	ropts.Seed = seed
	restored, err := runRetry(ctx, l, check.suffix, ropts)
	if err != nil {
		return fmt.Errorf("a build started from the state before step %d: %w", name, err)
	}
	got := splice(restored, saved.Steps, check, step)
	named := func(n int) string {
		if n > last && n-last <= len(probes) {
			return fmt.Sprintf("the read of step %d sent again after step %d", c.name(probes[n-last-1]), c.name(last))
		}
		return fmt.Sprintf("step %d", c.name(n))
	}
	if why := differs(whole, got, named); why != "" {
		return fmt.Errorf("a build started from the state before step %d %s", name, why)
	}
	cp.seed, cp.steps = seed, saved.Steps
	return nil
}

// differs says how got, a replay started from a checkpoint, answered
// otherwise than whole, the same steps replayed from the start; "" when
// every step answered alike. name names a step ("step 4").
func differs(whole, got *replay.Trace, name func(int) string) string {
	if len(got.Steps) != len(whole.Steps) {
		return fmt.Sprintf("replayed %d steps where a replay from the start replayed %d", len(got.Steps), len(whole.Steps))
	}
	for i, w := range whole.Steps {
		g := got.Steps[i]
		switch {
		case w.Ran && !g.Ran:
			return fmt.Sprintf("did not run %s, where a replay from the start did", name(w.N))
		case g.Ran && !w.Ran:
			return fmt.Sprintf("ran %s, where a replay from the start did not", name(w.N))
		case !w.Ran:
		case w.Outcome.Kind != g.Outcome.Kind:
			return fmt.Sprintf("answered %s %s where a replay from the start answered %s", name(w.N), describeOutcome(g.Outcome), describeOutcome(w.Outcome))
		default:
			if d := replay.Compare(w, g); len(d) > 0 {
				return fmt.Sprintf("answered %s otherwise than a replay from the start (at %s)", name(w.N), d[0].Path)
			}
		}
	}
	return ""
}

// name is the fixture's step that base's step n stands for.
func (c *checkpoints) name(n int) int {
	if c.stepOf != nil {
		return c.stepOf(n)
	}
	return n
}

// evidence is what became of the checkpoints: for each made, its step,
// build, and how many variants started from it, or why none did.
func (c *checkpoints) evidence() []CheckpointEvidence {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []CheckpointEvidence
	for k, cp := range c.at {
		out = append(out, CheckpointEvidence{Step: c.name(k.step), Build: k.role, Variants: int(cp.used.Load()), Unused: cp.why})
	}
	slices.SortFunc(out, func(a, b CheckpointEvidence) int {
		if a.Step != b.Step {
			return a.Step - b.Step
		}
		return map[string]int{"old": 0, "new": 1}[a.Build] - map[string]int{"old": 0, "new": 1}[b.Build]
	})
	return out
}
