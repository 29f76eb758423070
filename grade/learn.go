package grade

import (
	"context"
	"errors"
	"fmt"

	"github.com/kavach-dev/kavach"
)

// Learning is what Learn asks a fresh old build.
type Learning struct {
	// Schema: the field types of the steps' requests, of every kind of
	// them RequestKinds gives.
	Schema bool
	// Keys: which keys (or resources) each step touches, and which of them
	// it may write.
	Keys bool
	// Group, if set, is a request whose command's group the build is
	// asked (kavach.Abilities.Group): the failing step's.
	Group []byte
	// Pool, if set, is where the build takes its place while it runs.
	// Nil: it runs outside any pool.
	Pool *Pool
}

// Learned is what a fresh old build told of a recording's steps.
type Learned struct {
	// Schema is the field types of the steps' request kinds; nil when not
	// asked, or not learned (Learn's error says why): the variants then
	// guess field types.
	Schema kavach.Schema
	// Keys and Writes are, when asked, each step's keys and the keys it
	// may write, one entry per step (kavach.Abilities.Keys); a nil entry
	// is unknown, and every entry is when the integration cannot tell
	// or the build could not be asked.
	Keys, Writes [][]string
	// Replaces are, when asked, the keys each step replaces whole
	// (kavach.Abilities.Keys); nil when none or unknown.
	Replaces [][]string
	// Group and GroupCommands are, when asked and told, the group the
	// build's documentation puts Learning.Group's command in and the
	// group's commands.
	Group         string
	GroupCommands []string
}

// ErrCannotLearn is Learn's error when the schema is asked of an
// integration that cannot ask a build for one.
var ErrCannotLearn = errors.New("the integration cannot ask the build")

// Learn starts the old build once, without a faked clock, and asks it
// what l names about the steps: what a diff asks before it makes its
// variants, and what `kavach variants --build` asks, so that both
// number the variants alike. The build is not started when there is
// nothing it could be asked. The error is why the schema was not learned
// (ErrCannotLearn, the context's, the build's start as a diff's replay
// of it says it, or the asking);
// Keys are then unknown where it stopped before asking them.
func Learn(ctx context.Context, in kavach.Integration, old kavach.Launch, steps []kavach.Step, l Learning) (Learned, error) {
	var out Learned
	ab := in.Abilities()
	if l.Keys {
		out.Keys, out.Writes, out.Replaces = make([][]string, len(steps)), make([][]string, len(steps)), make([][]string, len(steps))
	}
	if l.Schema && (ab.Learn == nil || ab.Variation == nil) {
		return out, ErrCannotLearn
	}
	askKeys := l.Keys && ab.Keys != nil && len(steps) > 0
	askGroup := l.Group != nil && ab.Group != nil
	if !l.Schema && !askKeys && !askGroup {
		return out, nil
	}
	if l.Pool != nil {
		if !l.Pool.acquire(ctx) {
			return out, ctx.Err()
		}
		defer l.Pool.release()
	}
	p, err := in.Start(ctx, old)
	if err != nil {
		// As a diff's replays say it (replayBuilds).
		return out, fmt.Errorf("old build: %w", err)
	}
	defer p.Stop()
	if l.Schema {
		if out.Schema, err = ab.Learn(ctx, p.Addr(), RequestKinds(steps, ab.Variation)); err != nil {
			return out, err
		}
	}
	if askKeys {
		reqs := make([][]byte, len(steps))
		for i, s := range steps {
			reqs[i] = s.Request.Data
		}
		k, w, r := ab.Keys(ctx, p.Addr(), reqs)
		for i := range min(len(k), len(steps)) {
			out.Keys[i] = k[i]
			if i < len(w) {
				out.Writes[i] = w[i]
			}
			if i < len(r) {
				out.Replaces[i] = r[i]
			}
		}
	}
	if askGroup {
		// Not told (an old build, an undocumented command): the
		// integration's family alone reaches, as before.
		if g, cmds, err := ab.Group(ctx, p.Addr(), l.Group); err == nil {
			out.Group, out.GroupCommands = g, cmds
		}
	}
	return out, nil
}

// RequestKinds are the kinds of the steps' requests that v can vary, each
// once, in the order first met: what Learn asks the old build the field
// types of.
func RequestKinds(steps []kavach.Step, v *kavach.Variation) []string {
	var kinds []string
	seen := map[string]bool{}
	for _, s := range steps {
		if k, _, ok := v.Fields(s.Request.Data, nil); ok && !seen[k] {
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	return kinds
}
