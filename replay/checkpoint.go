package replay

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/kavach-dev/kavach"
)

// save writes the build's state to opts.SaveTo once every step has run
// (Options.SaveTo): only from a replay that ran whole, the build alive
// and idle, so that the state is what the steps left. It counts the keys
// the build holds first (Trace.Saved), for a replay started from the
// checkpoint to check that it holds as many (kavach.Seed.Held).
func (r *runner) save(ctx context.Context) error {
	ab := r.opts.Integration.Abilities()
	if ab.SaveData == nil {
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
	_, err := ab.SaveData(ctx, r.proc.Addr(), r.opts.SaveTo)
	return err
}

// Checkpoint replays events on build and saves the state they leave in
// the file at path (made or truncated): a seed a later replay of the
// steps that follow can start from (docs/replay.md, "Checkpoints"), with
// the keys the build held, so that a build started from it is checked to
// hold as many. The trace is the replay's. A replay that did not run
// whole (a crash, a hang) has no checkpoint: an error says why, and no
// file is left at path.
func Checkpoint(ctx context.Context, build kavach.Launch, events []kavach.Event, opts Options, path string) (*kavach.Seed, *Trace, error) {
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
