package replay_test

import (
	"context"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// TestSettledSecondsUnderLoad: every move into another second is seen by
// Redis's timer before the next request, while stress-ng saturates the
// cores, also right after a connection is opened (its accept is a turn
// of the build's loop that its timer did not run: counting it as the
// timer's turn leaves the LRU clock a second behind). Each second a new
// connection asks OBJECT IDLETIME of a key set a second before (1, unless
// a move was not settled: 0 when this one was not, 2 when the last one
// was not), then sets it again. Plain and perturbed replays alike.
func TestSettledSecondsUnderLoad(t *testing.T) {
	build := redisbuild.MustBuild(t)
	ms := time.Millisecond
	var rec []kavach.Event
	add := func(conn uint64, dir kavach.Direction, at time.Duration, data []byte) {
		rec = append(rec, kavach.Event{Conn: conn, Dir: dir, Offset: at, Data: data})
	}
	request := func(conn uint64, at time.Duration, cmd string, reply string) {
		b := [][]byte{}
		for _, a := range args(cmd) {
			b = append(b, []byte(a))
		}
		add(conn, kavach.Request, at, redis.AppendCommand(nil, b...))
		add(conn, kavach.Response, at, []byte(reply))
	}
	add(1, kavach.Open, 0, nil)
	request(1, 100*ms, "SET k v", "+OK\r\n")
	const rounds = 150
	for i := 1; i <= rounds; i++ {
		at := time.Duration(i)*time.Second + 100*ms
		conn := uint64(i + 1)
		add(conn, kavach.Open, at, nil)
		request(conn, at, "OBJECT IDLETIME k", ":1\r\n")
		request(conn, at+ms, "SET k v", "+OK\r\n")
		add(conn, kavach.Close, at+2*ms, []byte("client"))
	}
	slices.SortStableFunc(rec, func(a, b kavach.Event) int { return int(a.Offset - b.Offset) })
	for i := range rec {
		rec[i].Seq = uint64(i + 1)
	}
	path, err := exec.LookPath("stress-ng")
	if err != nil {
		t.Fatal("stress-ng is not installed: the README's test command installs it (scripts/deps.sh)")
	}
	load := exec.Command(path, "--cpu", "0", "--timeout", "600s", "--quiet")
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { load.Process.Kill(); load.Wait() }()
	time.Sleep(200 * time.Millisecond)

	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)

	// The first move after the build started, into another second: what
	// the launcher did to see it ready (a connection, closed) and the
	// replay's first connection may still be on their way to it.
	var first []kavach.Event
	first = append(first, kavach.Event{Conn: 1, Dir: kavach.Open, Offset: 900 * ms})
	for _, e := range []struct {
		at          time.Duration
		cmd, answer string
	}{{1100 * ms, "SET k v", "+OK\r\n"}, {2100 * ms, "OBJECT IDLETIME k", ":1\r\n"}} {
		b := [][]byte{}
		for _, a := range args(e.cmd) {
			b = append(b, []byte(a))
		}
		first = append(first, kavach.Event{Conn: 1, Dir: kavach.Request, Offset: e.at, Data: redis.AppendCommand(nil, b...)},
			kavach.Event{Conn: 1, Dir: kavach.Response, Offset: e.at, Data: []byte(e.answer)})
	}
	for i := range first {
		first[i].Seq = uint64(i + 1)
	}
	// Four at a time, as a diff runs its replays.
	var wg sync.WaitGroup
	for run := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := options(tl)
			opts.Perturb = run%2 == 1
			tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, first, opts)
			if err != nil {
				t.Error(err)
				return
			}
			if got := reply(tr, 2); got != "(integer) 1" {
				t.Errorf("run %d (perturbed %v): the idle time of a key set in the first second = %s, want 1", run+1, opts.Perturb, got)
			}
		}()
		if run%4 == 3 {
			wg.Wait()
		}
	}
	wg.Wait()

	for run := range 4 {
		opts := options(tl)
		opts.Perturb = run%2 == 1
		tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, opts)
		if err != nil {
			t.Fatal(err)
		}
		for n := 2; n < len(tr.Steps); n += 2 {
			if got := reply(tr, n); got != "(integer) 1" {
				t.Errorf("run %d (perturbed %v): step %d, the idle time of a key set a second before = %s, want 1", run+1, opts.Perturb, n, got)
			}
		}
	}
}
