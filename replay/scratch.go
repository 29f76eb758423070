package replay

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kavach-dev/kavach"
)

// StartAt starts build (a scratch instance, asked about a snapshot taken
// at at) with its clocks standing at at, so that what it loads is judged
// on that time: a key whose expiry is after at is kept, whenever it is
// asked. It returns the running build and the function that stops it and
// removes its clock.
func StartAt(ctx context.Context, in kavach.Integration, build kavach.Launch, at time.Time) (kavach.Process, func(), error) {
	clock, dir, err := fakeClock(&build, Options{Start: at}, &Trace{})
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() {
		clock.Close()
		os.RemoveAll(dir)
	}
	proc, err := in.Start(ctx, build)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	stop := func() {
		clock.Release()
		proc.Stop()
		cleanup()
	}
	if !clock.Loaded() {
		stop()
		return nil, nil, fmt.Errorf("build %s never loaded the clock library: it cannot be asked about a past moment", build.Path)
	}
	clock.Freeze()
	return proc, stop, nil
}
