package replay_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// ctxTracker is the Redis integration, its starts bounded by their
// context, remembering every build's pid.
type ctxTracker struct {
	tracker
	started chan struct{} // closed at the first start
	once    sync.Once
}

func (t *ctxTracker) Start(ctx context.Context, l kavach.Launch) (kavach.Process, error) {
	p, err := t.tracker.Start(ctx, l)
	if err == nil {
		t.once.Do(func() { close(t.started) })
	}
	return p, err
}

// TestRunStopsOnContext: a replay waiting for a reply that a busy build
// never gives (a script that loops: its time limit counts on the virtual
// clock, which does not move while the build works), with an hour's step
// timeout, ends once its context is done (a signal to Kavach), saying
// so, its build gone. (A sleep would not do: DEBUG SLEEP sleeps on the
// virtual clock, which flows through it.)
func TestRunStopsOnContext(t *testing.T) {
	build := redisbuild.MustBuild(t)
	rec := events(
		step{1, 0, args("SET k v"), "+OK\r\n", false},
		step{1, time.Millisecond, []string{"EVAL", "while true do end", "0"}, "+OK\r\n", false},
		step{1, 2 * time.Millisecond, args("GET k"), "$1\r\nv\r\n", false},
	)
	tl := &ctxTracker{tracker: tracker{Integration: redis.Integration{}}, started: make(chan struct{})}
	opts := options(tl)
	opts.StepTimeout = time.Hour
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		<-tl.started
		time.Sleep(500 * time.Millisecond) // let it send the script; not asserted on
		cancel(context.Canceled)
	}()
	tr, err := replay.Run(ctx, kavach.Launch{Path: build, Args: []string{"--enable-debug-command", "yes"}}, rec, opts)
	defer tl.checkGone(t)
	if err != nil && !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() == nil {
		t.Fatal("Run returned before its context was done")
	}
	if tr != nil && tr.Steps[2].Ran && tr.Steps[2].Outcome.Kind == kavach.OK {
		t.Errorf("step 3 answered after a script that never ends: the replay did not stop")
	}
}
