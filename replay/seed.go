package replay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/kavach-dev/kavach"
)

// startSeeded starts build from the state opts.Seed holds (docs/replay.md,
// "State"): its data file given to the build, its state directory copied
// by each start as {state}, its keys restored, and what the build then
// holds checked, all before the first step, with the clock at the
// recording's start (a key whose expiry has passed there is not
// restored).
func startSeeded(ctx context.Context, build kavach.Launch, opts Options) (kavach.Process, error) {
	seed := opts.Seed
	if seed.Empty() {
		return opts.Integration.Start(ctx, build)
	}
	restore := opts.Integration.Abilities().Restore
	if len(seed.Keys) > 0 && restore == nil {
		return nil, fmt.Errorf("replay: the fixture holds keys of the state it started from, which the %s integration cannot restore", opts.Integration.Protocol())
	}
	build.Data, build.State = seed.Data, seed.Dir
	proc, err := opts.Integration.Start(ctx, build)
	if err != nil {
		return nil, err
	}
	if len(seed.Keys) > 0 {
		err = restore(ctx, proc.Addr(), seed.Keys)
	}
	if err == nil {
		err = checkHeld(ctx, opts, proc.Addr())
	}
	if err != nil {
		proc.Stop()
		return nil, fmt.Errorf("replay: build %s: %w", build.Path, err)
	}
	return proc, nil
}

// ErrNotRestored is the error of a replay whose build, started from a
// seed, does not hold what the seed held (checkHeld).
var ErrNotRestored = errors.New("the state was not restored whole")

// checkHeld checks, before the first step, that the build started from
// the seed holds as many keys in each database as the recording's
// service did (observed, not assumed: a restore that lost a key, a data
// file the build read only in part).
func checkHeld(ctx context.Context, opts Options, addr string) error {
	held := opts.Integration.Abilities().Held
	if opts.Seed.Held == nil || held == nil {
		return nil
	}
	got, err := held(ctx, addr)
	if err != nil {
		return fmt.Errorf("state: counting the keys it holds: %w", err)
	}
	of := "the fixture's state"
	if opts.Seed.Saved {
		of = "the saved state"
	}
	for _, db := range slices.Sorted(maps.Keys(mergeKeys(got, opts.Seed.Held))) {
		if got[db] != opts.Seed.Held[db] {
			return fmt.Errorf("started from %s, it holds %d keys in database %d where %s holds %d: %w", of, got[db], db, of, opts.Seed.Held[db], ErrNotRestored)
		}
	}
	return nil
}

func mergeKeys(a, b map[int]int) map[int]int {
	out := map[int]int{}
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}
