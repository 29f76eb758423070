package replay

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/kavach-dev/kavach"
)

// save writes the build's state to opts.SaveTo, or its state directory
// to opts.SaveDir, once every step has run: only from a replay that ran
// whole, the build alive and idle, so that the state is what the steps
// left. It counts the keys the build holds first (Trace.Saved), for a
// replay started from the checkpoint to check that it holds as many
// (kavach.Seed.Held).
func (r *runner) save(ctx context.Context) error {
	ab := r.opts.Integration.Abilities()
	if r.opts.SaveTo != nil && ab.SaveData == nil {
		return fmt.Errorf("the %s integration cannot save a build's state", r.opts.Integration.Protocol())
	}
	switch {
	case r.tr.Stopped != "":
		return fmt.Errorf("the replay stopped before its last step: %s", r.tr.Stopped)
	case r.tr.Exit != nil:
		return fmt.Errorf("the build exited during the replay: %s", r.tr.Exit)
	}
	r.sent = true // whatever was sent last, wait until the build is idle
	r.quiesce()
	if e := r.proc.Exited(); e != nil {
		return fmt.Errorf("the build exited during the replay: %s", e)
	}
	if ab.Held != nil {
		held, err := ab.Held(ctx, r.proc.Addr())
		if err != nil {
			return fmt.Errorf("counting the keys it holds: %w", err)
		}
		r.tr.Saved = held
	}
	if r.opts.SaveDir != "" {
		sp, ok := r.proc.(stateSaver)
		if !ok {
			return fmt.Errorf("the %s integration's builds cannot have their state directory saved", r.opts.Integration.Protocol())
		}
		return sp.SaveState(r.opts.SaveDir)
	}
	_, err := ab.SaveData(ctx, r.proc.Addr(), r.opts.SaveTo)
	return err
}

// stateSaver is a build whose state directory can be saved
// (launch.Spawned).
type stateSaver interface {
	SaveState(dst string) error
}

// CanCheckpoint says whether a replay with these options can save its
// build's state (Checkpoint) and a build be started from it: the
// integration saves a data file and starts a build from one
// (kavach.Abilities.SaveData, DataFile), or the builds start from a state
// directory, which is saved as the build leaves it.
func CanCheckpoint(codec kavach.Integration, seed *kavach.Seed) bool {
	ab := codec.Abilities()
	return ab.SaveData != nil && ab.DataFile != "" || seed != nil && seed.Dir != ""
}

// Checkpoint replays events on build and saves the state they leave at
// path (docs/replay.md, "Checkpoints"): in a file made or truncated
// there, the build's own data file (kavach.Abilities.SaveData), with the
// keys the build held, so that a build started from it is checked to
// hold as many; or, for a build started from a state directory
// (opts.Seed.Dir) whose integration has no data file, a copy of that
// directory as the build left it once stopped. The seed returned is what
// a later replay of the steps that follow starts from. The trace is the
// replay's. A replay that did not run whole (a crash, a hang) has no
// checkpoint: an error says why, and nothing is left at path.
func Checkpoint(ctx context.Context, build kavach.Launch, events []kavach.Event, opts Options, path string) (*kavach.Seed, *Trace, error) {
	if opts.Integration.Abilities().SaveData == nil && opts.Seed != nil && opts.Seed.Dir != "" {
		opts.SaveDir = path
		tr, err := Run(ctx, build, events, opts)
		if err != nil {
			os.RemoveAll(path)
			return nil, tr, err
		}
		return &kavach.Seed{Dir: path, Saved: true}, tr, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	opts.SaveTo = f
	tr, err := Run(ctx, build, events, opts)
	err = errors.Join(err, f.Close())
	if err != nil {
		os.Remove(path)
		return nil, tr, err
	}
	return &kavach.Seed{Data: path, Held: tr.Saved, Saved: true}, tr, nil
}
