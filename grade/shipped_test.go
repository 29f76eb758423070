package grade_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/record"
	"github.com/kavach-dev/kavach/replay"
)

// debianServer is Debian's packaged server (scripts/deps.sh installs it),
// linked with the system's jemalloc: the build that ships.
const debianServer = "/usr/bin/redis-server"

// jemallocBuild builds Redis as a plain make does (the bundled jemalloc),
// with patches.
func jemallocBuild(t *testing.T, patches ...string) string {
	t.Helper()
	t.Setenv("KAVACH_REDIS_MALLOC", "jemalloc")
	return redisbuild.MustBuild(t, patches...)
}

// TestVerdictsOnShippedBuilds: the builds people run replay under the
// virtual clock and get the verdicts the libc builds get, to the variant
// and the step. The GETRANGE incident is recorded on a plain make build
// of the planted bug (bundled jemalloc) and graded with Debian's packaged
// server as the correct fix (it is the same version without the planted
// bug), a plain make build of the narrow fix, the old build against
// itself, and Debian's server as an old build that does not fail; each
// beside the same grade of the libc builds.
func TestVerdictsOnShippedBuilds(t *testing.T) {
	if _, err := os.Stat(debianServer); err != nil {
		t.Fatalf("Debian's redis-server is not installed (scripts/deps.sh installs it): %v", err)
	}
	je := struct{ old, narrow string }{
		old:    jemallocBuild(t, incidents.PatchPaths(incidents.GetrangeOld)...),
		narrow: jemallocBuild(t, incidents.PatchPaths(incidents.GetrangeNarrow)...),
	}
	libc := getBuilds(t)
	jeFx := recordIncident(t, je.old)
	libcFx := recordIncident(t, libc.old)
	for _, tc := range []struct {
		name             string
		jeOld, jeNew     string
		libcOld, libcNew string
		minVariants      int
		wantPrefix       string
	}{
		{"correct fix", je.old, debianServer, libc.old, libc.pristine, 10, "fixed"},
		{"narrow fix", je.old, je.narrow, libc.old, libc.narrow, 10, "variant_failed("},
		{"old build unchanged", je.old, je.old, libc.old, libc.old, 0, "still_failing@5"},
		{"old build does not fail", debianServer, debianServer, libc.pristine, libc.pristine, 0, "unverified(not-reproduced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shipped := diff(t, jeFx, tc.jeOld, tc.jeNew, tc.minVariants)
			for _, side := range []*grade.Report{shipped} {
				if side.Evidence.Old.Clock != "virtual" || side.Evidence.New.Clock != "virtual" {
					t.Errorf("clocks %q, %q: want both virtual", side.Evidence.Old.Clock, side.Evidence.New.Clock)
				}
			}
			built := diff(t, libcFx, tc.libcOld, tc.libcNew, tc.minVariants)
			if !strings.HasPrefix(shipped.Verdict, tc.wantPrefix) || shipped.Verdict != built.Verdict {
				t.Fatalf("shipped builds: %s; libc builds: %s; want both %s…, equal\nfindings: %+v", shipped.Verdict, built.Verdict, tc.wantPrefix, shipped.Findings)
			}
		})
	}
}

// TestDebianPackageContract: a contract recorded in launch mode on
// Debian's packaged server, as an operator would record one (go-redis
// and redis-cli; keys with expiry, a pause longer than a TTL, a blocking
// pop used as a timer), replays on that same binary as recorded, holds
// against the same version built from source, and is broken by a planted
// fault in that build (a blocking timeout that fires a second late).
func TestDebianPackageContract(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(debianServer); err != nil {
		t.Fatalf("Debian's redis-server is not installed (scripts/deps.sh installs it): %v", err)
	}
	out := filepath.Join(t.TempDir(), "debian.kavach")
	s := record.Session{Out: out, Launch: &kavach.Launch{Path: debianServer},
		Proxy: record.Options{Codec: redis.Integration{}}}
	rec, err := s.Go(context.Background(), redis.Protocol)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: rec.Addr, PoolSize: 1, Protocol: 2, ReadTimeout: 10 * time.Second})
	steps := []func() error{
		func() error { return c.Set(ctx, "session:1", "alice", 400*time.Millisecond).Err() },
		func() error { return c.Get(ctx, "session:1").Err() },
		func() error { return c.Set(ctx, "counter", "10", 100*time.Second).Err() },
		func() error { time.Sleep(700 * time.Millisecond); return c.Exists(ctx, "session:1").Err() },
		func() error { return c.BLPop(ctx, time.Second, "nothing").Err() },
		func() error { return c.TTL(ctx, "counter").Err() },
		func() error { return c.PTTL(ctx, "session:1").Err() },
	}
	for i, step := range steps {
		if err := step(); err != nil && err != goredis.Nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	c.Close()
	time.Sleep(50 * time.Millisecond) // the close reaches the proxy
	if _, err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Failure != nil || fx.Header.Launch == nil {
		t.Fatalf("recorded failure %+v, launch %+v: want a contract recorded in launch mode", fx.Failure, fx.Header.Launch)
	}

	// The same binary replays it as recorded, under the virtual clock.
	tr, err := replay.Run(ctx, kavach.Launch{Path: debianServer}, fx.Events, replay.Options{
		Integration: redis.Integration{}, Start: fx.Header.Start, StepTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Clock != "virtual" {
		t.Fatalf("clock %q: Debian's server must run under the virtual clock", tr.Clock)
	}
	recorded := replay.Recorded(fx.Events, redis.Integration{})
	if len(tr.Steps) != len(recorded) || len(recorded) < len(steps) {
		t.Fatalf("%d steps replayed, %d recorded", len(tr.Steps), len(recorded))
	}
	for n := range recorded {
		if !tr.Steps[n].Ran {
			t.Errorf("step %d not run", n+1)
		}
		if d := replay.Compare(recorded[n], tr.Steps[n]); len(d) > 0 {
			t.Errorf("step %d differs from the recording: %v", n+1, d)
		}
	}

	source := redisbuild.MustBuild(t)
	if rep := gradeContract(t, fx, debianServer, source, nil); rep.Verdict != "held" {
		t.Errorf("Debian's server against the same version from source: %s, want held\nfindings: %+v", rep.Verdict, rep.Findings)
	}
	late := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.TimeoutLate)...)
	if rep := gradeContract(t, fx, debianServer, late, nil); !strings.HasPrefix(rep.Verdict, "diverged@") {
		t.Errorf("against a blocking timeout a second late: %s, want diverged\nfindings: %+v", rep.Verdict, rep.Findings)
	}
}
