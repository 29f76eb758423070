package grade

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/replay"
	"github.com/kavach-dev/kavach/variants"
)

// CanHandOff says whether a build's state can be saved and another build
// started from it, for the recording fx: what an "upgrade" variant needs.
// The integration saves the build's data file and starts a build from
// one (Redis), or fx's builds start from a state directory, which a
// build leaves as it was written (HTTP recorded with --state-dir:
// replay.Options.SaveDir).
func CanHandOff(codec kavach.Integration, fx *fixtures.Fixture) bool {
	return replay.CanCheckpoint(codec, nil) || fx != nil && fx.State != nil && fx.State.Mode == fixtures.StateDir
}

// handOff prepares an "upgrade" variant (variants.Variant.HandOff,
// docs/variants.md, "Upgrade"): the old build replays the steps before
// the hand-off step, from the state ropts gives every build, and the
// state they leave is saved (replay.Checkpoint); the variant returned
// holds the steps from the hand-off on, and ropts starts every build
// from that state. done removes the saved state. An error says why no
// state could be saved (the old build stopped before the hand-off).
func handOff(ctx context.Context, v variants.Variant, old kavach.Launch, ropts replay.Options) (_ variants.Variant, _ replay.Options, done func(), err error) {
	codec := ropts.Integration
	sp, err := splitAt(v.Events, v.Origin, v.HandOff, codec)
	if err != nil {
		return v, ropts, nil, fmt.Errorf("the steps from step %d on: %w", v.HandOff, err)
	}
	dir, err := os.MkdirTemp("", "kavach-handoff-")
	if err != nil {
		return v, ropts, nil, err
	}
	done = func() { os.RemoveAll(dir) }
	seed, _, err := replay.Checkpoint(ctx, old, sp.prefix, ropts, filepath.Join(dir, "state"))
	if err != nil {
		done()
		return v, ropts, nil, fmt.Errorf("the old build's state before step %d: %w", v.HandOff, err)
	}
	ropts.Seed = seed
	v.Events, v.Origin = sp.suffix, sp.origin
	return v, ropts, done, nil
}

// split is a recording cut at a step (splitAt).
type split struct {
	// prefix is what a build replays before the state is saved.
	prefix []kavach.Event
	// suffix is what a build started from that state replays.
	suffix []kavach.Event
	// origin maps the suffix's steps, counting from 1, to what the
	// origin given to splitAt maps the events' steps to; steps to the
	// events' own steps.
	origin, steps []int
	// moved are the steps before the cut that are in the suffix and not
	// in the prefix: those still waiting for their answer when a step
	// from the cut on was sent (a client blocked in BLPOP), in order.
	moved []int
}

// splitAt cuts events at step n (counting from 1). The prefix is every
// step before it, with the opens and closes before its request, but for
// the steps still unanswered when a step from n on was sent (a client
// blocked, or a reply that came late): no data file holds a waiting
// client, so these are moved to the suffix, and a build started from the
// saved state is sent them again, in their order, and waits in them
// again. The suffix is those steps, step n and every step after it, and
// before them again the steps of the prefix that set state no data file
// holds (kavach.Abilities.SetsState: a connection's on the connections
// the suffix uses, the server's everywhere), cut out as a dependency
// slice is (cutSlice: each connection opened where the suffix first
// uses it).
func splitAt(events []kavach.Event, origin []int, n int, codec kavach.Integration) (split, error) {
	setsState := codec.Abilities().SetsState
	type setUp struct {
		step  int
		conn  uint64
		scope kavach.StateScope
	}
	var setUps []setUp
	step := make([]int, len(events)) // each request's and reply's step
	cut := len(events)
	g := kavach.NewStepGrouper(codec)
	for i, ev := range events {
		s, _ := g.Add(ev)
		if ev.Dir != kavach.Request && ev.Dir != kavach.Response {
			continue
		}
		step[i] = s
		switch {
		case s >= n:
			cut = min(cut, i)
		case ev.Dir == kavach.Request && setsState != nil:
			if sc := setsState(ev.Data); sc != kavach.NoState {
				setUps = append(setUps, setUp{s, ev.Conn, sc})
			}
		}
	}
	moved := map[int]bool{}
	used := map[uint64]bool{} // connections the suffix's own steps use
	for i, ev := range events {
		if ev.Dir == kavach.Request || ev.Dir == kavach.Response {
			if step[i] < n && i > cut {
				moved[step[i]] = true
			}
			if step[i] >= n || i > cut {
				used[ev.Conn] = true
			}
		}
	}
	var sp split
	for i, ev := range events {
		isStep := ev.Dir == kavach.Request || ev.Dir == kavach.Response
		if isStep && step[i] < n && !moved[step[i]] || !isStep && i < cut {
			sp.prefix = append(sp.prefix, ev)
		}
	}
	var keep []int
	for _, u := range setUps {
		if !moved[u.step] && (u.scope == kavach.ServerState || used[u.conn]) {
			keep = append(keep, u.step)
		}
	}
	for s := range moved {
		keep = append(keep, s)
		sp.moved = append(sp.moved, s)
	}
	slices.Sort(sp.moved)
	slices.Sort(keep)
	for s := n; s <= g.Steps(); s++ {
		keep = append(keep, s)
	}
	if n > g.Steps() {
		return split{prefix: sp.prefix}, nil // every step is before n
	}
	w, err := cutSlice(replay.Slice(events), codec, keep)
	if err != nil {
		return split{}, err
	}
	sp.suffix, sp.steps = w.events, keep
	for _, s := range keep {
		o := 0
		if s-1 < len(origin) {
			o = origin[s-1]
		}
		sp.origin = append(sp.origin, o)
	}
	return sp, nil
}

// upTo is the steps of events through step n (counting from 1), as
// recorded, with the opens and closes before step n+1's request: a
// recording that ends after step n, a step still waiting there included.
func upTo(events []kavach.Event, n int, codec kavach.Integration) []kavach.Event {
	g := kavach.NewStepGrouper(codec)
	var out []kavach.Event
	ended := false
	for _, ev := range events {
		s, _ := g.Add(ev)
		if ev.Dir == kavach.Request || ev.Dir == kavach.Response {
			if s > n {
				ended = true
				continue
			}
		} else if ended {
			continue
		}
		out = append(out, ev)
	}
	return out
}
