package scenarios_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grade"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/loadtest"
	"github.com/kavach-dev/kavach/internal/redisbuild"
)

// timerRuns is how many times `make test-load` grades the whole table
// under load (`make test`: loadtest.Runs, two): the test took 4 min with
// 10 on a 2-core machine whose other work kept its load average at 12 to
// 22 (1 min with 3 at 8), so well under that on an idle one.
const timerRuns = 10

// TestTimerScenariosSameVerdictUnderLoad grades each timer and blocking
// scenario of the replay tests (incidents.TimerScenarios: BLPOP as a
// timer, a blocked pop woken by a later LPUSH, XREAD BLOCK, WAIT, CLIENT
// PAUSE, OBJECT IDLETIME and TTL after a gap), recorded with stock clients
// on the stock build, as kavach diff grades it (grade.Run, no variants):
// the stock build against itself holds the contract, and a build with a
// planted fault in that scenario's timing (timeouts a second late, or at
// half their time; OBJECT IDLETIME one more) diverges at the step that
// shows it. One more fixture is recorded on the early build, whose BLPOP
// times out before the LPUSH: graded against the stock build, which
// answers the pop with the pushed element, it diverges there. The whole
// table is graded loadtest.Runs(timerRuns) times while stress-ng saturates every core,
// with the same verdict every time. No timing is asserted.
func TestTimerScenariosSameVerdictUnderLoad(t *testing.T) {
	stock := redisbuild.MustBuild(t)
	late := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.TimeoutLate)...)
	early := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.TimeoutEarly)...)
	idle := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IdlePlusOne)...)

	type gradeCase struct {
		name     string
		fx       *fixtures.Fixture
		old, new string
		want     string
	}
	var cases []gradeCase
	// Recorded before the load: a recording's timing is the clients'.
	record := func(build string, sc incidents.TimerScenario) *fixtures.Fixture {
		t.Helper()
		fx, err := incidents.RecordClients(t.TempDir(), build, sc.Clients)
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		return fx
	}
	for _, sc := range incidents.TimerScenarios {
		fx := record(stock, sc)
		cases = append(cases, gradeCase{sc.Name + ": stock", fx, stock, stock, grade.Held})
		fault, command := late, sc.Late
		switch {
		case sc.Late == "" && sc.Early != "":
			fault, command = early, sc.Early
		case sc.Late == "" && sc.Early == "":
			fault, command = idle, "OBJECT"
		}
		cases = append(cases, gradeCase{sc.Name + ": planted fault", fx, stock, fault, diverged(t, fx, command)})
	}
	woken := incidents.TimerScenarios[1]
	fx := record(early, woken)
	cases = append(cases,
		gradeCase{woken.Name + ", timed out when recorded: old build", fx, early, early, grade.Held},
		gradeCase{woken.Name + ", timed out when recorded: answered on the new", fx, early, stock, diverged(t, fx, "BLPOP")})

	defer loadtest.Stress(t)()
	c := redis.Integration{}
	for i := range loadtest.Runs(timerRuns) {
		for _, gc := range cases {
			rep, err := grade.Run(context.Background(), fixtures.NewRecording(gc.fx, c), kavach.Launch{Path: gc.old}, kavach.Launch{Path: gc.new},
				grade.Options{Integration: c, Seed: 1})
			if err != nil {
				t.Fatalf("%s: %v", gc.name, err)
			}
			if rep.Verdict != gc.want {
				t.Errorf("run %d under load, %s: %s, want %s; findings %+v", i+1, gc.name, rep.Verdict, gc.want, rep.Findings)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// diverged is the verdict of a contract broken first at the fixture's
// first step that sends command.
func diverged(t *testing.T, fx *fixtures.Fixture, command string) string {
	t.Helper()
	for _, s := range kavach.Steps(fx.Events, redis.Integration{}) {
		if c, _ := redis.ParseCommand(s.Request.Data); c.Name == command {
			return fmt.Sprintf("%s@%d", grade.Diverged, s.N)
		}
	}
	t.Fatalf("fixture %s has no %s step", fx.Path, command)
	return ""
}
