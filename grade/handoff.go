package grade

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/replay"
	"github.com/kavach-dev/kavach/variants"
)

// CanHandOff says whether a build's state can be saved and another build
// started from it: what an "upgrade" variant needs.
func CanHandOff(codec kavach.Integration) bool {
	ab := codec.Abilities()
	return ab.SaveData != nil && ab.DataFile != ""
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
	prefix, suffix, origin, err := splitAt(v.Events, v.Origin, v.HandOff, codec)
	if err != nil {
		return v, ropts, nil, fmt.Errorf("the steps from step %d on: %w", v.HandOff, err)
	}
	dir, err := os.MkdirTemp("", "kavach-handoff-")
	if err != nil {
		return v, ropts, nil, err
	}
	done = func() { os.RemoveAll(dir) }
	seed, _, err := replay.Checkpoint(ctx, old, prefix, ropts, filepath.Join(dir, "state"))
	if err != nil {
		done()
		return v, ropts, nil, fmt.Errorf("the old build's state before step %d: %w", v.HandOff, err)
	}
	ropts.Seed = seed
	v.Events, v.Origin = suffix, origin
	return v, ropts, done, nil
}

// splitAt cuts events at step n (counting from 1): prefix is every step
// before it, with the opens and closes before its request; suffix is
// step n and every step after it, and before them again the steps of the
// prefix that set state no data file holds (kavach.Abilities.SetsState:
// a connection's on the connections the suffix uses, the server's
// everywhere), cut out as a dependency slice is (cutSlice: each
// connection opened where the suffix first uses it). origin maps the
// suffix's steps, counting from 1, to what origin maps the events' steps
// to.
func splitAt(events []kavach.Event, origin []int, n int, codec kavach.Integration) (prefix, suffix []kavach.Event, sufOrigin []int, err error) {
	setsState := codec.Abilities().SetsState
	type setUp struct {
		step  int
		conn  uint64
		scope kavach.StateScope
	}
	var setUps []setUp
	step := make([]int, len(events)) // each request's and reply's step
	cut := len(events)
	used := map[uint64]bool{} // connections the suffix's own steps use
	g := kavach.NewStepGrouper(codec)
	for i, ev := range events {
		s, _ := g.Add(ev)
		if ev.Dir != kavach.Request && ev.Dir != kavach.Response {
			continue
		}
		step[i] = s
		switch {
		case s >= n:
			used[ev.Conn] = true
			cut = min(cut, i)
		case ev.Dir == kavach.Request && setsState != nil:
			if sc := setsState(ev.Data); sc != kavach.NoState {
				setUps = append(setUps, setUp{s, ev.Conn, sc})
			}
		}
	}
	for i, ev := range events {
		isStep := ev.Dir == kavach.Request || ev.Dir == kavach.Response
		if isStep && step[i] < n || !isStep && i < cut {
			prefix = append(prefix, ev)
		}
	}
	var keep []int
	for _, u := range setUps {
		if u.scope == kavach.ServerState || used[u.conn] {
			keep = append(keep, u.step)
		}
	}
	for s := n; s <= g.Steps(); s++ {
		keep = append(keep, s)
	}
	if n > g.Steps() {
		return prefix, nil, nil, nil // every step is before n
	}
	w, err := cutSlice(replay.Slice(events), codec, keep)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, s := range keep {
		o := 0
		if s-1 < len(origin) {
			o = origin[s-1]
		}
		sufOrigin = append(sufOrigin, o)
	}
	return prefix, w.events, sufOrigin, nil
}
