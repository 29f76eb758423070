package replay_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/incidents"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/record"
	"github.com/kavach-dev/kavach/replay"
)

// recordWith records, through the real proxy in front of build, what
// clients does against the proxy's address, and returns the recording and
// the time it started (replays start their virtual clock there).
func recordWith(t *testing.T, build string, clients func(addr string)) ([]kavach.Event, time.Time) {
	t.Helper()
	srv, err := redis.Launcher{}.Start(kavach.Launch{Path: build})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	path := filepath.Join(t.TempDir(), "session.kavach")
	h := fixtures.Header{Protocol: redis.Protocol, Upstream: srv.Addr(), Start: time.Now()}
	w, err := fixtures.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	p, err := record.Start(record.Options{Codec: redis.Codec{}, Upstream: srv.Addr(), Fixture: w}, h.Start)
	if err != nil {
		t.Fatal(err)
	}
	clients(p.Addr().String())
	time.Sleep(50 * time.Millisecond) // the last closes reach the proxy
	p.Close()
	w.Close(fixtures.End{})
	fx, err := fixtures.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return fx.Events, fx.Header.Start
}

// redisCLI pipes commands, one a line, into a stock redis-cli connected to
// addr: one connection, each command sent once the last was answered.
func redisCLI(t *testing.T, addr string, commands ...string) string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("redis-cli", "-h", host, "-p", port)
	cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("redis-cli: %v\n%s", err, out)
	}
	return string(out)
}

func client(addr string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 1, Protocol: 2, ReadTimeout: 10 * time.Second})
}

// after runs f after d, concurrently; the returned wait waits for it.
func after(d time.Duration, f func()) (wait func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(d)
		f()
	}()
	return wg.Wait
}

// timerScenario is a recorded session whose answers depend on the
// server's own timers, and the step (by its command) at which a build
// whose timers fire late, or early, first differs from the recording.
type timerScenario struct {
	name    string
	clients func(t *testing.T, addr string)
	late    string // first differing command on the late build; "" none
	early   string // first differing command on the early build; "" none
}

var timerScenarios = []timerScenario{
	{
		// BLPOP on a list nothing is pushed to, as a one-second timer; the
		// same connection writes when it fires, another reads that later.
		name: "BLPOP as a timer",
		clients: func(t *testing.T, addr string) {
			b := client(addr)
			defer b.Close()
			b.Ping(context.Background())
			done := after(1250*time.Millisecond, func() { b.TTL(context.Background(), "after") })
			if out := redisCLI(t, addr, "BLPOP timer 1", "SET after v EX 100"); !strings.Contains(out, "OK") {
				t.Errorf("redis-cli said %q", out)
			}
			done()
		},
		late: "TTL",
	},
	{
		// A blocked pop woken by a later write on another connection.
		name: "BLPOP woken by LPUSH",
		clients: func(t *testing.T, addr string) {
			a, b := client(addr), client(addr)
			defer a.Close()
			defer b.Close()
			ctx := context.Background()
			a.Ping(ctx)
			b.Ping(ctx)
			// Margins of half a second both ways, for a loaded machine: the
			// early build times out at 1 s, the stock one at 2 s.
			pushed := after(1500*time.Millisecond, func() { b.LPush(ctx, "q", "j") })
			a.BLPop(ctx, 2*time.Second, "q")
			pushed()
			time.Sleep(200 * time.Millisecond)
			b.LLen(ctx, "q")
			a.Set(ctx, "done", "1", 0)
		},
		early: "BLPOP",
	},
	{
		name: "XREAD BLOCK",
		clients: func(t *testing.T, addr string) {
			a, b := client(addr), client(addr)
			defer a.Close()
			defer b.Close()
			ctx := context.Background()
			a.Ping(ctx)
			b.Ping(ctx)
			done := after(1050*time.Millisecond, func() { b.TTL(ctx, "after") })
			a.XRead(ctx, &goredis.XReadArgs{Streams: []string{"s", "$"}, Block: 800 * time.Millisecond})
			a.Set(ctx, "after", "v", 100*time.Second)
			done()
		},
		late: "TTL",
	},
	{
		// WAIT for a replica that does not exist: it answers 0 when its
		// timeout fires.
		name: "WAIT",
		clients: func(t *testing.T, addr string) {
			a, b := client(addr), client(addr)
			defer a.Close()
			defer b.Close()
			ctx := context.Background()
			a.Ping(ctx)
			b.Ping(ctx)
			done := after(750*time.Millisecond, func() { b.TTL(ctx, "after") })
			a.Do(ctx, "WAIT", "1", "500")
			a.Set(ctx, "after", "v", 100*time.Second)
			done()
		},
		late: "TTL",
	},
	{
		// CLIENT PAUSE holds another client's write until it ends.
		name: "CLIENT PAUSE",
		clients: func(t *testing.T, addr string) {
			a, b, c := client(addr), client(addr), client(addr)
			defer a.Close()
			defer b.Close()
			defer c.Close()
			ctx := context.Background()
			a.Ping(ctx)
			b.Ping(ctx)
			c.Ping(ctx)
			a.Do(ctx, "CLIENT", "PAUSE", "800", "WRITE")
			done := after(1050*time.Millisecond, func() { c.TTL(ctx, "after") })
			time.Sleep(100 * time.Millisecond)
			b.Set(ctx, "p", "1", 0)
			b.Set(ctx, "after", "v", 100*time.Second)
			done()
		},
		late: "TTL",
	},
	{
		// Answers made of the clock right after a multi-second gap. The gap
		// keeps TTL away from its rounding edge: TTL answers
		// (ms left + 500) / 1000, so after exactly 2.5 s of a 100 s expiry
		// it flips between 98 and 97 on a millisecond, and the proxy only
		// knows when a request reached the server to within its own
		// latency (on a loaded machine, a millisecond or more): such a
		// recording is rightly noise there, not a replay fault.
		name: "OBJECT IDLETIME and TTL after a gap",
		clients: func(t *testing.T, addr string) {
			a := client(addr)
			defer a.Close()
			ctx := context.Background()
			// OBJECT IDLETIME counts whole seconds of the clock: start a
			// tenth of a second into one, so that no answer sits within
			// the proxy's latency of a second's edge.
			a.Ping(ctx)
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
			a.Set(ctx, "k", "hello", 100*time.Second)
			time.Sleep(2300 * time.Millisecond)
			a.Do(ctx, "OBJECT", "IDLETIME", "k")
			a.TTL(ctx, "k")
			a.Do(ctx, "OBJECT", "IDLETIME", "k")
		},
	},
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
	late := redisbuild.MustBuild(t, incidents.PatchPaths([]string{"block-timeout-late.patch"})...)
	early := redisbuild.MustBuild(t, incidents.PatchPaths([]string{"block-timeout-early.patch"})...)
	idle := redisbuild.MustBuild(t, incidents.PatchPaths([]string{"idletime-plus-one.patch"})...)
	tl := &tracker{Launcher: redis.Launcher{}}
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
	for _, sc := range timerScenarios {
		t.Run(sc.name, func(t *testing.T) {
			var rec []kavach.Event
			rec, began = recordWith(t, stock, func(addr string) { sc.clients(t, addr) })
			steps := kavach.Steps(rec, redis.Codec{})
			command := func(n int) string {
				c, _ := redis.ParseCommand(steps[n-1].Request.Data)
				return c.Name
			}
			recorded := replay.Recorded(rec, redis.Codec{}, redis.Codec{}, redis.Codec{})
			// Noise as kavach diff finds it: two replays, one perturbed.
			noise := replay.FindNoise(recorded, 0, run(t, stock, rec, false), run(t, stock, rec, true))
			for _, f := range noise.List() {
				if command(f.Step) != "COMMAND" && command(f.Step) != "HELLO" {
					t.Errorf("step %d (%s) is noise at %s: the replay does not reproduce it", f.Step, command(f.Step), f.Path)
				}
			}
			stop := stress(t)
			for i := range 10 {
				tr := run(t, stock, rec, false)
				if v := replay.Verify(recorded, nil, tr, noise); !v.Reproduced || tr.Stopped != "" {
					t.Fatalf("replay %d under load: first different step %d, stopped %q: %s", i+1, v.FirstDifferent, tr.Stopped, describe(v, tr))
				}
			}
			stop()
			for _, fault := range []struct {
				name, build, want string
			}{{"late", late, sc.late}, {"early", early, sc.early}} {
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
			if strings.Contains(sc.name, "IDLETIME") {
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
	early := redisbuild.MustBuild(t, incidents.PatchPaths([]string{"block-timeout-early.patch"})...)
	rec, began := recordWith(t, early, func(addr string) { timerScenarios[1].clients(t, addr) })
	tl := &tracker{Launcher: redis.Launcher{}}
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

// stress saturates every core with stress-ng until the returned stop is
// called (or the test ends).
func stress(t *testing.T) (stop func()) {
	t.Helper()
	path, err := exec.LookPath("stress-ng")
	if err != nil {
		t.Fatal("stress-ng is not installed: the README's test command installs it (scripts/deps.sh)")
	}
	cmd := exec.Command(path, "--cpu", "0", "--timeout", "300s", "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
	t.Cleanup(stop)
	time.Sleep(200 * time.Millisecond) // the workers are running
	return stop
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
		tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, options(redis.Launcher{}))
		if err != nil {
			b.Fatal(err)
		}
		if tr.Stopped != "" || reply(tr, 100) != "(nil)" {
			b.Fatalf("stopped %q, step 100 = %s", tr.Stopped, reply(tr, 100))
		}
	}
	b.ReportMetric(at.Minutes(), "recorded-min")
}
