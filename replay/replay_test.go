package replay_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/launch"
	"github.com/kavach-dev/kavach/replay"
)

var start = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// step is one request of a synthetic recording: on conn, at offset, the
// command args, and the reply the recording saw ("" for none).
type step struct {
	conn   uint64
	at     time.Duration
	args   []string
	replay string
	closed bool // the server closed the connection after the request
}

// events builds a recording: conns open at 0, each request followed by
// its recorded reply.
func events(steps ...step) []kavach.Event {
	var evs []kavach.Event
	open := map[uint64]bool{}
	seq := uint64(0)
	add := func(ev kavach.Event) {
		seq++
		ev.Seq = seq
		evs = append(evs, ev)
	}
	for _, s := range steps {
		if !open[s.conn] {
			open[s.conn] = true
			add(kavach.Event{Conn: s.conn, Dir: kavach.Open, Offset: s.at})
		}
		b := make([][]byte, len(s.args))
		for i, a := range s.args {
			b[i] = []byte(a)
		}
		add(kavach.Event{Conn: s.conn, Dir: kavach.Request, Offset: s.at, Data: redis.AppendCommand(nil, b...)})
		if s.replay != "" {
			add(kavach.Event{Conn: s.conn, Dir: kavach.Response, Offset: s.at, Data: []byte(s.replay)})
		}
		if s.closed {
			add(kavach.Event{Conn: s.conn, Dir: kavach.Close, Offset: s.at, Data: []byte("server")})
		}
	}
	return evs
}

func args(s string) []string { return strings.Fields(s) }

// eventLog returns a function that appends an event to *rec, numbered
// in order.
func eventLog(rec *[]kavach.Event) func(conn uint64, dir kavach.Direction, at time.Duration, data string) {
	return func(conn uint64, dir kavach.Direction, at time.Duration, data string) {
		*rec = append(*rec, kavach.Event{Seq: uint64(len(*rec) + 1), Conn: conn, Dir: dir, Offset: at, Data: []byte(data)})
	}
}

// command is a RESP request of args.
func command(a ...string) string {
	b := make([][]byte, len(a))
	for i := range a {
		b[i] = []byte(a[i])
	}
	return string(redis.AppendCommand(nil, b...))
}

// tracker is a launcher that remembers the pid of every build it starts,
// so tests can check that none outlives a replay.
type tracker struct {
	kavach.Integration
	mu   sync.Mutex
	pids []int
}

func (t *tracker) Start(ctx context.Context, l kavach.Launch) (kavach.Process, error) {
	p, err := t.Integration.Start(ctx, l)
	if err == nil {
		t.mu.Lock()
		t.pids = append(t.pids, p.(*launch.Spawned).Pid())
		t.mu.Unlock()
	}
	return p, err
}

func (t *tracker) checkGone(tb testing.TB) {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pid := range t.pids {
		if alive(pid) {
			tb.Errorf("build process %d outlived the replay", pid)
		}
		for _, f := range []string{"faketime_shm_" + strconv.Itoa(pid), "sem.faketime_sem_" + strconv.Itoa(pid)} {
			if _, err := os.Stat(filepath.Join("/dev/shm", f)); err == nil {
				tb.Errorf("libfaketime left /dev/shm/%s behind", f)
			}
		}
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func options(in kavach.Integration) replay.Options {
	return replay.Options{Integration: in, Start: start, StepTimeout: 5 * time.Second}
}

// reply renders a step's first reply like redis-cli.
func reply(tr *replay.Trace, n int) string {
	s := tr.Steps[n-1]
	if len(s.Responses) == 0 {
		return "(none: " + s.Outcome.String() + ")"
	}
	return redis.Integration{}.DescribeResponse(s.Responses[0], 0)
}

func TestVirtualClock(t *testing.T) {
	build := redisbuild.MustBuild(t)
	unix := start.Unix()
	timeReply := func(sec int64, usec string) string {
		s := strconv.FormatInt(sec, 10)
		return "*2\r\n$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n$" + strconv.Itoa(len(usec)) + "\r\n" + usec + "\r\n"
	}
	rec := events(
		step{1, 0, args("SET k v EX 2"), "+OK\r\n", false},
		step{1, 3 * time.Second, args("GET k"), "$-1\r\n", false},
		step{1, 3 * time.Second, args("SET b hello EX 100"), "+OK\r\n", false}, // not an integer: small integers are shared objects with their own LRU
		step{1, 4500 * time.Millisecond, args("TTL b"), ":99\r\n", false},
		step{1, 4500 * time.Millisecond, args("TIME"), timeReply(unix+4, "500000"), false},
		step{1, 63500 * time.Millisecond, args("OBJECT IDLETIME b"), ":60\r\n", false},
		step{1, time.Hour, args("TTL b"), ":-2\r\n", false},
		step{1, time.Hour, args("TIME"), timeReply(unix+3600, "0"), false},
	)
	tl := &tracker{Integration: redis.Integration{}}
	tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, options(tl))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.checkGone(t)
	if tr.Clock != "virtual" {
		t.Fatalf("clock = %q, want virtual", tr.Clock)
	}
	for n, want := range map[int]string{
		2: "(nil)",
		4: "(integer) 99",
		5: `1) "` + strconv.FormatInt(unix+4, 10) + `" 2) "500500"`,
		6: "(integer) 60",
		7: "(integer) -2",
		8: `1) "` + strconv.FormatInt(unix+3600, 10) + `" 2) "500"`,
	} {
		if got := reply(tr, n); got != want {
			t.Errorf("step %d = %s, want %s", n, got, want)
		}
	}
	// An hour of recording, replayed without sleeping through it.
	if tr.Wall > 5*time.Minute {
		t.Errorf("replay took %s: it slept through the recorded gaps", tr.Wall)
	}
	// The recording's own replies are reproduced (TIME's microseconds are not compared).
	recorded := replay.Recorded(rec, redis.Integration{})
	for n := 1; n <= 8; n++ {
		if d := replay.Compare(recorded[n-1], tr.Steps[n-1]); len(d) > 0 {
			t.Errorf("step %d differs from the recording: %v", n, d)
		}
	}

	// A clock variant: a day later from step 4 on.
	opts := options(tl)
	opts.Shift = func(step int) time.Duration {
		if step >= 4 {
			return 24 * time.Hour
		}
		return 0
	}
	shifted, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply(shifted, 4); got != "(integer) -2" {
		t.Errorf("TTL a day later = %s, want -2 (expired)", got)
	}
	if got, want := reply(shifted, 5), `1) "`+strconv.FormatInt(unix+4+86400, 10)+`" 2) "500500"`; got != want {
		t.Errorf("TIME a day later = %s, want %s", got, want)
	}
}

func TestRealTimeWhenTheBuildCannotBeFaked(t *testing.T) {
	// A build whose clock cannot be virtual is refused before anything
	// runs, saying why; --real-time replays it in real time, and the
	// trace says so. Fakeable is what decides; check it on real files.
	if ok, why := replay.Fakeable("/usr/local/go/bin/go"); ok || !strings.Contains(why, "Go binary") && !strings.Contains(why, "statically linked") {
		t.Errorf("Fakeable(go) = %v, %q", ok, why)
	}
	dir := t.TempDir()
	src, static := filepath.Join(dir, "s.c"), filepath.Join(dir, "static-server")
	ran := filepath.Join(dir, "ran")
	os.WriteFile(src, []byte("#include <stdio.h>\nint main(void){FILE *f = fopen(\""+ran+"\", \"w\"); if (f) fclose(f); return 0;}\n"), 0o644)
	if out, err := exec.Command("cc", "-static", "-o", static, src).CombinedOutput(); err != nil {
		t.Fatalf("cc -static: %v\n%s", err, out)
	}
	tl := &tracker{Integration: redis.Integration{}}
	_, err := replay.Run(context.Background(), kavach.Launch{Path: static}, events(step{1, 0, args("PING"), "+PONG\r\n", false}), options(tl))
	if err == nil || !strings.Contains(err.Error(), "statically linked") || !strings.Contains(err.Error(), static) || !strings.Contains(err.Error(), "--real-time") {
		t.Errorf("replay of a static binary: %v, want a refusal naming it, saying why and what to do", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the static binary was started before the refusal")
	}
	build := redisbuild.MustBuild(t)
	if ok, why := replay.Fakeable(build); !ok {
		t.Errorf("Fakeable(redis built from source) = false: %s", why)
	}
	opts := options(redis.Integration{})
	opts.RealTime = true
	tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, events(step{1, time.Hour, args("PING"), "+PONG\r\n", false}), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tr.Clock, "real: ") || reply(tr, 1) != "PONG" {
		t.Errorf("clock %q, reply %s", tr.Clock, reply(tr, 1))
	}
}

func TestFaults(t *testing.T) {
	build := redisbuild.MustBuild(t)
	debug := kavach.Launch{Path: build, Args: []string{"--enable-debug-command", "yes"}}

	t.Run("crash mid-replay", func(t *testing.T) {
		tl := &tracker{Integration: redis.Integration{}}
		defer tl.checkGone(t)
		tr, err := replay.Run(context.Background(), debug, events(
			step{1, 0, args("SET k v"), "+OK\r\n", false},
			step{1, time.Second, args("DEBUG SEGFAULT"), "", true},
			step{2, 2 * time.Second, args("GET k"), "$1\r\nv\r\n", false},
		), options(tl))
		if err != nil {
			t.Fatal(err)
		}
		s := tr.Steps[1]
		if s.Outcome.Kind != kavach.Crash || !strings.Contains(s.Outcome.Detail, "SIGSEGV") {
			t.Errorf("DEBUG SEGFAULT outcome = %+v, want a crash with the signal", s.Outcome)
		}
		if tr.Exit == nil || tr.Exit.Signal != "SIGSEGV" || !strings.Contains(tr.Stopped, "the build exited") {
			t.Errorf("exit %+v, stopped %q", tr.Exit, tr.Stopped)
		}
		if tr.Steps[2].Ran {
			t.Error("a step after the build died was run")
		}
	})

	t.Run("hang", func(t *testing.T) {
		tl := &tracker{Integration: redis.Integration{}}
		defer tl.checkGone(t)
		opts := options(tl)
		opts.StepTimeout = 300 * time.Millisecond
		tr, err := replay.Run(context.Background(), debug, events(
			step{1, 0, args("DEBUG SLEEP 30"), "+OK\r\n", false},
			step{1, time.Second, args("PING"), "+PONG\r\n", false},
		), opts)
		if err != nil {
			t.Fatal(err)
		}
		if o := tr.Steps[0].Outcome; o.Kind != kavach.Hang {
			t.Errorf("DEBUG SLEEP outcome = %+v, want hang", o)
		}
		if !strings.Contains(tr.Stopped, "step 1 hung") || tr.Steps[1].Ran {
			t.Errorf("stopped %q; step 2 ran: %v", tr.Stopped, tr.Steps[1].Ran)
		}
	})

	t.Run("exits at start-up", func(t *testing.T) {
		tl := &tracker{Integration: redis.Integration{}}
		_, err := replay.Run(context.Background(), kavach.Launch{Path: build, Args: []string{"--no-such-option", "x"}},
			events(step{1, 0, args("PING"), "+PONG\r\n", false}), options(tl))
		var se *launch.StartError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "exited during start-up") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("never answers PING", func(t *testing.T) {
		fake := filepath.Join(t.TempDir(), "redis-server")
		os.WriteFile(fake, []byte("#!/bin/sh\necho listening soon\nexec sleep 60\n"), 0o755)
		_, err := replay.Run(context.Background(), kavach.Launch{Path: fake},
			events(step{1, 0, args("PING"), "+PONG\r\n", false}), options(redis.Integration{StartTimeout: 500 * time.Millisecond}))
		// A script holds no jemalloc: never ready, and not blamed on the
		// jemalloc deadlock under libfaketime (a build that links it is).
		if err == nil || !strings.Contains(err.Error(), "never became ready within 500ms") || strings.Contains(err.Error(), "jemalloc") {
			t.Fatalf("err = %v, want never ready, without the jemalloc hint", err)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		tl := &tracker{Integration: redis.Integration{}}
		defer tl.checkGone(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		tr, err := replay.Run(ctx, debug, events(step{1, 0, args("PING"), "+PONG\r\n", false}), options(tl))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tr.Stopped, "interrupted") {
			t.Errorf("stopped = %q", tr.Stopped)
		}
	})
}

func TestPipelinedAndBlockingAcrossConnections(t *testing.T) {
	build := redisbuild.MustBuild(t)
	// conn 2 blocks on BLPOP; conn 1 pushes; the BLPOP reply was recorded
	// after the LPUSH reply. Conn 1 also pipelines two requests.
	var rec []kavach.Event
	ev, cmd := eventLog(&rec), command
	ev(1, kavach.Open, 0, "")
	ev(2, kavach.Open, 0, "")
	ev(2, kavach.Request, time.Millisecond, cmd("BLPOP", "jobs", "0"))
	ev(1, kavach.Request, time.Second, cmd("LPUSH", "jobs", "j1"))
	ev(1, kavach.Request, time.Second, cmd("INCR", "n"))
	ev(1, kavach.Response, time.Second, ":1\r\n")
	ev(1, kavach.Response, time.Second, ":1\r\n")
	ev(2, kavach.Response, time.Second, "*2\r\n$4\r\njobs\r\n$2\r\nj1\r\n")
	tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, options(redis.Integration{}))
	if err != nil {
		t.Fatal(err)
	}
	recorded := replay.Recorded(rec, redis.Integration{})
	v := replay.Verify(recorded, nil, tr, replay.Noise{})
	if !v.Reproduced {
		t.Fatalf("not reproduced: %+v", v.Steps)
	}
	if got := reply(tr, 1); got != `1) "jobs" 2) "j1"` {
		t.Errorf("BLPOP = %s", got)
	}
}

func TestDeterministicTraces(t *testing.T) {
	build := redisbuild.MustBuild(t)
	rec := realisticSession(t, build)
	if n := len(kavach.Steps(rec, redis.Integration{})); n < 200 {
		t.Fatalf("session has %d steps, want a few hundred", n)
	}
	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	var first *replay.Trace
	for i := 0; i < 10; i++ {
		tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, options(tl))
		if err != nil {
			t.Fatal(err)
		}
		if tr.Stopped != "" {
			t.Fatalf("run %d stopped: %s", i, tr.Stopped)
		}
		if first == nil {
			first = tr
			continue
		}
		for j := range tr.Steps {
			a, b := first.Steps[j], tr.Steps[j]
			if !cmp.Equal(a.Output, b.Output) || a.Outcome != b.Outcome || !a.Virtual.Equal(b.Virtual) {
				t.Fatalf("run %d differs from run 0 at step %d:\n%s", i, j+1, cmp.Diff(a.Output, b.Output))
			}
		}
	}
	// And the first replay gives what the recording shows, but for noise
	// that the recording itself reveals (listed, never dropped).
	recorded := replay.Recorded(rec, redis.Integration{})
	// Only replies made of the time the service read can differ: stream
	// ids (XADD *, XRANGE) and TIME, stamped a little after the proxy saw
	// the request.
	steps := kavach.Steps(rec, redis.Integration{})
	for _, f := range replay.FindNoise(recorded, 0, first).List() {
		c, _ := redis.ParseCommand(steps[f.Step-1].Request.Data)
		if c.Name != "XADD" && c.Name != "XRANGE" && c.Name != "TIME" {
			t.Errorf("step %d (%s) %s differs between the recording and its replay", f.Step, c, f.Path)
		}
	}
}

// A build that closes connections on purpose (CLIENT KILL here) is alive:
// every step is judged, the replay runs to its end, and no exit is
// blamed. docs/replay.md, "Closed connections".
func TestServerClosedConnections(t *testing.T) {
	build := redisbuild.MustBuild(t)
	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	const n = 150
	var steps []step
	for i := range n {
		at := time.Duration(i) * 10 * time.Millisecond
		conn := uint64(i + 2)
		steps = append(steps,
			step{conn, at, args("CLIENT SETNAME c" + strconv.Itoa(i)), "+OK\r\n", false},
			step{conn, at, args("BLPOP q 0"), "", false},
			step{1, at + time.Millisecond, args("CLIENT KILL TYPE normal SKIPME yes"), ":1\r\n", false},
		)
	}
	steps = append(steps, step{1, n * 10 * time.Millisecond, args("PING"), "+PONG\r\n", false})
	tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, events(steps...), options(tl))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Stopped != "" || tr.Exit != nil {
		t.Fatalf("stopped %q, exit %+v: the build closed connections on purpose", tr.Stopped, tr.Exit)
	}
	for _, s := range tr.Steps {
		if !s.Ran || s.Outcome.Kind == "" {
			t.Fatalf("step %d not judged: %+v", s.N, s)
		}
		if s.Outcome.Kind == kavach.Crash && s.Outcome.Detail != "connection closed by the build" {
			t.Errorf("step %d: %q, want the close, and no exit blamed", s.N, s.Outcome.Detail)
		}
	}
	if got := reply(tr, len(tr.Steps)); got != "PONG" {
		t.Errorf("last PING = %s", got)
	}
	for i := range n {
		if o := tr.Steps[3*i+1].Outcome; o.Kind != kavach.Crash {
			t.Errorf("BLPOP on killed connection %d: %+v, want its close", i, o)
		}
	}
}

// stopper starts builds and stops them (SIGSTOP) once they are ready.
type stopper struct{ tracker }

func (s *stopper) Start(ctx context.Context, l kavach.Launch) (kavach.Process, error) {
	p, err := s.tracker.Start(ctx, l)
	if err == nil {
		syscall.Kill(p.(*launch.Spawned).Pid(), syscall.SIGSTOP)
	}
	return p, err
}

// A stopped build hangs the first step it does not answer within the step
// timeout, and the replay stops there: no later clock move waits for it.
func TestStoppedBuildHangs(t *testing.T) {
	build := redisbuild.MustBuild(t)
	for _, tc := range []struct {
		name  string
		conns [4]uint64
	}{
		{"one connection", [4]uint64{1, 1, 1, 1}},
		{"a connection per step", [4]uint64{1, 2, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := &stopper{tracker{Integration: redis.Integration{}}}
			defer tl.checkGone(t)
			opts := options(tl)
			opts.StepTimeout = 500 * time.Millisecond
			var steps []step
			for i, c := range tc.conns {
				steps = append(steps, step{c, time.Duration(i) * time.Second, args("PING"), "+PONG\r\n", false})
			}
			tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, events(steps...), opts)
			if err != nil {
				t.Fatal(err)
			}
			if o := tr.Steps[0].Outcome; o.Kind != kavach.Hang || !strings.Contains(o.Detail, "stopped") {
				t.Errorf("step 1 = %+v, want a hang of a stopped build", o)
			}
			if !strings.HasPrefix(tr.Stopped, "step 1 hung") {
				t.Errorf("stopped = %q", tr.Stopped)
			}
			for _, s := range tr.Steps[1:] {
				if s.Ran && s.Outcome.Kind != kavach.Hang {
					t.Errorf("step %d after the hang: ran, %+v", s.N, s.Outcome)
				}
			}
		})
	}
}

// TestTheBuildsOwnReading: an XADD with the id * answers the build's
// clock as it ran the command, here two milliseconds after the proxy
// stamped the request. The replay sends it with its clock at that
// reading, so the ids come out as recorded (at the request's stamp they
// would be two milliseconds early).
func TestTheBuildsOwnReading(t *testing.T) {
	build := redisbuild.MustBuild(t)
	id := func(ms time.Duration, seq int) string {
		s := strconv.FormatInt(start.Add(ms).UnixMilli(), 10) + "-" + strconv.Itoa(seq)
		return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n"
	}
	xadd := redis.AppendCommand(nil, []byte("XADD"), []byte("s"), []byte("*"), []byte("f"), []byte("v"))
	var rec []kavach.Event
	for _, ev := range []kavach.Event{
		{Conn: 1, Dir: kavach.Open},
		{Conn: 1, Dir: kavach.Request, Offset: 10 * time.Millisecond, Data: xadd},
		{Conn: 1, Dir: kavach.Response, Offset: 12500 * time.Microsecond, Data: []byte(id(12*time.Millisecond, 0))},
		{Conn: 1, Dir: kavach.Request, Offset: 12600 * time.Microsecond, Data: xadd},
		{Conn: 1, Dir: kavach.Response, Offset: 12800 * time.Microsecond, Data: []byte(id(12*time.Millisecond, 1))},
		// A reading ahead of the reply is not the clock (the stream's
		// last id plus one): the request is sent at its own stamp.
		{Conn: 1, Dir: kavach.Request, Offset: 30 * time.Millisecond, Data: redis.AppendCommand(nil, []byte("XADD"), []byte("t"), []byte(strconv.FormatInt(start.Add(time.Hour).UnixMilli(), 10)+"-5"), []byte("f"), []byte("v"))},
		{Conn: 1, Dir: kavach.Response, Offset: 30100 * time.Microsecond, Data: []byte(id(time.Hour, 5))},
		{Conn: 1, Dir: kavach.Request, Offset: 30200 * time.Microsecond, Data: redis.AppendCommand(nil, []byte("XADD"), []byte("t"), []byte("*"), []byte("f"), []byte("v"))},
		{Conn: 1, Dir: kavach.Response, Offset: 30300 * time.Microsecond, Data: []byte(id(time.Hour, 6))},
		{Conn: 1, Dir: kavach.Request, Offset: 31 * time.Millisecond, Data: redis.AppendCommand(nil, []byte("XADD"), []byte("u"), []byte("*"), []byte("f"), []byte("v"))},
		{Conn: 1, Dir: kavach.Response, Offset: 31100 * time.Microsecond, Data: []byte(id(31*time.Millisecond, 0))},
	} {
		ev.Seq = uint64(len(rec) + 1)
		rec = append(rec, ev)
	}
	tl := &tracker{Integration: redis.Integration{}}
	tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, options(tl))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.checkGone(t)
	recorded := replay.Recorded(rec, redis.Integration{})
	for n := range recorded {
		if d := replay.Compare(recorded[n], tr.Steps[n]); len(d) > 0 {
			t.Errorf("step %d differs from the recording: %v", n+1, d)
		}
	}
}
