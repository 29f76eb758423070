package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/loadtest"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// recordWith records, through the real proxy in front of build, what
// clients does against the proxy's address, and returns the recording and
// the time it started (replays start their virtual clock there).
func recordWith(t *testing.T, build string, clients func(addr string)) ([]kavach.Event, time.Time) {
	t.Helper()
	fx, err := incidents.RecordClients(t.TempDir(), build, func(addr string) error {
		clients(addr)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fx.Events, fx.Header.Start
}

// recordScenario records a timer scenario's session on build.
func recordScenario(t *testing.T, build string, sc incidents.TimerScenario) ([]kavach.Event, time.Time) {
	t.Helper()
	fx, err := incidents.RecordClients(t.TempDir(), build, sc.Clients)
	if err != nil {
		t.Fatalf("%s: %v", sc.Name, err)
	}
	return fx.Events, fx.Header.Start
}

// TestTimersAndBlockingUnderLoad: recordings made with stock clients, whose
// answers depend on the server's timers (blocking timeouts, pauses, the
// cached clock), replay on the build they were recorded on exactly as
// recorded, every time, while another process saturates the cores; a
// build whose timers fire a second late, or at half their time, differs
// at the step that shows it, and no replay hangs or waits in real time
// for what the recording shows as idle.
func TestTimersAndBlockingUnderLoad(t *testing.T) {
	stock := redisbuild.MustBuild(t)
	late := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.TimeoutLate)...)
	early := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.TimeoutEarly)...)
	idle := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.IdlePlusOne)...)
	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	var began time.Time
	run := func(t *testing.T, build string, rec []kavach.Event, perturb bool) *replay.Trace {
		t.Helper()
		opts := options(tl)
		opts.Start, opts.Perturb = began, perturb
		tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, opts)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	for _, sc := range incidents.TimerScenarios {
		t.Run(sc.Name, func(t *testing.T) {
			var rec []kavach.Event
			rec, began = recordScenario(t, stock, sc)
			steps := kavach.Steps(rec, redis.Integration{})
			command := func(n int) string {
				c, _ := redis.ParseCommand(steps[n-1].Request.Data)
				return c.Name
			}
			recorded := replay.Recorded(rec, redis.Integration{})
			// Noise as kavach diff finds it: two replays, one perturbed.
			noise := replay.FindNoise(recorded, 0, run(t, stock, rec, false), run(t, stock, rec, true))
			for _, f := range noise.List() {
				if command(f.Step) != "COMMAND" && command(f.Step) != "HELLO" {
					t.Errorf("step %d (%s) is noise at %s: the replay does not reproduce it", f.Step, command(f.Step), f.Path)
				}
			}
			stop := loadtest.Stress(t)
			for i := range loadtest.Runs(10) {
				tr := run(t, stock, rec, false)
				if v := replay.Verify(recorded, nil, tr, noise); !v.Reproduced || tr.Stopped != "" {
					t.Fatalf("replay %d under load: first different step %d, stopped %q: %s", i+1, v.FirstDifferent, tr.Stopped, describe(v, tr))
				}
			}
			stop()
			for _, fault := range []struct {
				name, build, want string
			}{{"late", late, sc.Late}, {"early", early, sc.Early}} {
				tr := run(t, fault.build, rec, false)
				v := replay.Verify(recorded, nil, tr, noise)
				if strings.Contains(tr.Stopped, "hung") {
					t.Errorf("%s build: the replay hung: %s", fault.name, tr.Stopped)
				}
				switch {
				case fault.want == "" && !v.Reproduced:
					t.Errorf("%s build: differs at step %d (%s), want no difference: %s", fault.name, v.FirstDifferent, command(v.FirstDifferent), describe(v, tr))
				case fault.want != "" && (v.Reproduced || command(v.FirstDifferent) != fault.want):
					t.Errorf("%s build: first different step %d (%q), want the %s step", fault.name, v.FirstDifferent, command(max(v.FirstDifferent, 1)), fault.want)
				}
			}
			if strings.Contains(sc.Name, "IDLETIME") {
				tr := run(t, idle, rec, false)
				if v := replay.Verify(recorded, nil, tr, noise); v.Reproduced || command(v.FirstDifferent) != "OBJECT" {
					t.Errorf("idle time +1 build: first different step %d, want the OBJECT IDLETIME step", v.FirstDifferent)
				}
			}
		})
	}
}

// TestWokenLaterThanRecorded: a recording made on a build whose blocking
// timeout fired early (the pop answered nil before the LPUSH came) replays
// on a build that keeps the client blocked until the LPUSH wakes it: the
// replay does not wait for the reply where the recording received it, so
// the LPUSH is sent, the pop gets its element, and nothing hangs.
func TestWokenLaterThanRecorded(t *testing.T) {
	stock := redisbuild.MustBuild(t)
	early := redisbuild.MustBuild(t, incidents.PatchPaths(incidents.TimeoutEarly)...)
	rec, began := recordScenario(t, early, incidents.TimerScenarios[1])
	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	opts := options(tl)
	opts.Start = began
	tr, err := replay.Run(context.Background(), kavach.Launch{Path: stock}, rec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Stopped != "" {
		t.Fatalf("stopped: %s", tr.Stopped)
	}
	for _, s := range tr.Steps {
		c, _ := redis.ParseCommand(s.Request)
		if c.Name == "BLPOP" {
			if got := strings.Join(flatten(s.Output), " "); got != "q j" {
				t.Errorf("BLPOP on the fixed build = %q, want q j", got)
			}
			if !s.Answered.After(s.Virtual.Add(1200 * time.Millisecond)) {
				t.Errorf("BLPOP answered at %s, sent at %s: want it answered when the LPUSH came, 1.5 s later", s.Answered, s.Virtual)
			}
		}
		if !s.Ran || s.Outcome.Kind == kavach.Hang {
			t.Errorf("step %d (%s): ran %v, outcome %s", s.N, c.Name, s.Ran, s.Outcome)
		}
	}
}

func flatten(v any) []string {
	switch x := v.(type) {
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, flatten(e)...)
		}
		return out
	case nil:
		return nil
	}
	return []string{fmt.Sprint(v)}
}

// describe says, for a failed check, what the first differing step got.
func describe(v replay.Verification, tr *replay.Trace) string {
	for _, c := range v.Steps {
		if c.Step == v.FirstDifferent {
			return strings.TrimSpace(strings.Join([]string{c.Status, c.Outcome.String(), c.Outcome.Detail, fmtDiffs(c.Diffs)}, " "))
		}
	}
	return ""
}

func fmtDiffs(ds []replay.Diff) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, "; ")
}

// BenchmarkBlockedSteps replays a recording of 100 blocking pops, each
// timing out after 1 to 30 s (nothing is ever pushed): about 26 minutes
// of recorded waiting. It reports the real time one replay takes, and
// the recorded time it covers (bench/README.md: target under 1 s).
func BenchmarkBlockedSteps(b *testing.B) {
	build := redisbuild.MustBuild(b)
	var steps []step
	at := time.Duration(0)
	for i := range 100 {
		wait := time.Duration(1+i*29/99) * time.Second
		steps = append(steps, step{conn: 1, at: at, args: args("BLPOP never " + fmt.Sprint(int64(wait/time.Second))), replay: "*-1\r\n"})
		at += wait + time.Millisecond
	}
	// The recorded reply comes when the timeout fires, not with the request,
	// and the next request right after it.
	rec := events(steps...)
	k := 0
	for i := range rec {
		if rec[i].Dir == kavach.Request {
			k++
		}
		if rec[i].Dir == kavach.Response {
			// As a real recording shows it: Redis answers once its clock is
			// past the deadline, a millisecond later at least.
			rec[i].Offset = steps[k-1].at + time.Duration(1+(k-1)*29/99)*time.Second + time.Millisecond
		}
	}
	b.ResetTimer()
	for b.Loop() {
		tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, options(redis.Integration{}))
		if err != nil {
			b.Fatal(err)
		}
		if tr.Stopped != "" || reply(tr, 100) != "(nil)" {
			b.Fatalf("stopped %q, step 100 = %s", tr.Stopped, reply(tr, 100))
		}
	}
	b.ReportMetric(at.Minutes(), "recorded-min")
}
