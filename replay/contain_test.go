package replay_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

// TestContainedWhereShared: with network namespaces refused (forced by
// KAVACH_NO_NETNS), the build shares this machine's network, and a
// fixture's requests that would rebind it or reach out are not sent:
// Kavach answers them, the steps say contained, and they are not
// compared. While the replay runs (held by DEBUG SLEEP) the build listens
// on its loopback port only; a listener the fixture's MIGRATE names gets
// no connection, not even from a script or a transaction; the data the
// MIGRATE would have moved is still there; the steps around them are sent
// and compared as ever.
func TestContainedWhereShared(t *testing.T) {
	t.Setenv("KAVACH_NO_NETNS", "1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	lport := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	build := kavach.Launch{Path: redisbuild.MustBuild(t), Args: []string{"--enable-debug-command", "local"}}
	script := "return redis.call('migrate', '127.0.0.1', ARGV[1], 'greeting', 0, 1000)"
	evs := events(
		step{1, 0, args("SET greeting hello"), "+OK\r\n", false},                                                 // 1
		step{1, 1 * time.Millisecond, []string{"CONFIG", "SET", "bind", "0.0.0.0 ::"}, "+OK\r\n", false},         // 2 contained
		step{1, 2 * time.Millisecond, args("config set port 6379"), "+OK\r\n", false},                            // 3 contained
		step{1, 3 * time.Millisecond, args("MIGRATE 127.0.0.1 " + lport + " greeting 0 1000"), "+OK\r\n", false}, // 4 contained
		step{1, 4 * time.Millisecond, []string{"EVAL", script, "0", lport}, "+OK\r\n", false},                    // 5 contained
		step{1, 5 * time.Millisecond, args("GET greeting"), "$5\r\nhello\r\n", false},                            // 6
	)
	// A transaction, pipelined as go-redis sends it: the withheld command
	// inside it is answered in its place, the others go to the build, and
	// EXEC's reply (one short) is not compared.
	at := 6 * time.Millisecond
	tx := [][]string{args("MULTI"), args("CONFIG SET protected-mode no"), args("SET other 1"), args("EXEC")}
	for _, a := range tx {
		b := make([][]byte, len(a))
		for i := range a {
			b[i] = []byte(a[i])
		}
		evs = append(evs, kavach.Event{Conn: 1, Dir: kavach.Request, Offset: at, Data: redis.AppendCommand(nil, b...)})
	}
	for _, r := range []string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n+OK\r\n+OK\r\n"} {
		evs = append(evs, kavach.Event{Conn: 1, Dir: kavach.Response, Offset: at, Data: []byte(r)})
	}
	evs = append(evs, events(
		step{1, 7 * time.Millisecond, args("GET other"), "$1\r\n1\r\n", false}, // 11
		step{1, 8 * time.Millisecond, args("DEBUG SLEEP 1"), "+OK\r\n", false}, // 12
		step{1, 9 * time.Millisecond, args("PING"), "+PONG\r\n", false},        // 13
	)[1:]...) // without a second open of connection 1
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}

	type result struct {
		tr  *replay.Trace
		err error
	}
	done := make(chan result, 1)
	go func() {
		tr, err := replay.Run(context.Background(), build, evs, options(tl))
		done <- result{tr, err}
	}()
	// While the replay runs: every socket the build listens on is on
	// 127.0.0.1 (this machine's network: the build shares it), and one is.
	var r result
	looked := 0
	for r.tr == nil && r.err == nil {
		select {
		case r = <-done:
			continue
		case <-time.After(5 * time.Millisecond):
		}
		tl.mu.Lock()
		pids := append([]int(nil), tl.pids...)
		tl.mu.Unlock()
		for _, pid := range pids {
			socks := sockets(pid)
			for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
				rs, err := rows(table)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range rs {
					if f[3] != "0A" || !socks[f[9]] {
						continue
					}
					looked++
					if !strings.HasPrefix(f[1], "0100007F:") {
						t.Errorf("the build listens on %s (%s), beyond 127.0.0.1", f[1], table)
					}
				}
			}
		}
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if looked == 0 {
		t.Fatal("never saw the build's listening socket: the check above looked at nothing")
	}
	tr := r.tr
	if !strings.HasPrefix(tr.Network, "contained (namespaces refused: KAVACH_NO_NETNS is set") {
		t.Errorf("network %q, want contained", tr.Network)
	}
	withheld := map[int]bool{2: true, 3: true, 4: true, 5: true, 8: true}
	for _, s := range tr.Steps {
		switch {
		case withheld[s.N]:
			if s.Contained == "" || len(s.Responses) != 1 || string(s.Responses[0]) != redis.ContainedReply {
				t.Errorf("step %d: contained %q, replies %q: want withheld and answered by Kavach", s.N, s.Contained, s.Responses)
			}
		case s.N == 10: // EXEC
			if s.Contained == "" || reply(tr, 10) != "1) OK" {
				t.Errorf("step 10 (EXEC): contained %q, reply %q: want sent, its one-short reply not compared", s.Contained, reply(tr, 10))
			}
		default:
			if s.Contained != "" || s.Outcome.Kind != kavach.OK {
				t.Errorf("step %d: contained %q, outcome %s: want sent and answered", s.N, s.Contained, s.Outcome)
			}
		}
	}
	// The data MIGRATE would have moved is still there; SET other ran.
	if got := reply(tr, 6); got != `"hello"` {
		t.Errorf("GET greeting after the withheld MIGRATE: %s, want \"hello\"", got)
	}
	v := replay.Verify(replay.Recorded(evs, redis.Integration{}), nil, tr, replay.Noise{})
	if !v.Reproduced {
		t.Errorf("not reproduced from step %d: contained steps must not count", v.FirstDifferent)
	}
	for _, c := range v.Steps {
		if want := withheld[c.Step] || c.Step == 10; want != (c.Status == replay.StatusContained) {
			t.Errorf("step %d: status %s", c.Step, c.Status)
		}
	}
	ln.Close()
	for c := range accepted {
		c.Close()
		t.Error("the fixture's MIGRATE target got a connection")
	}
}

// TestContainedStepStillJudgesTheRest: containment is not a blanket pass.
// The same recording with a wrong answer recorded after the contained
// steps still differs there; and a failure marked at a contained step is
// never reproduced (Kavach, not the build, answered it).
func TestContainedStepStillJudgesTheRest(t *testing.T) {
	t.Setenv("KAVACH_NO_NETNS", "1")
	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	build := kavach.Launch{Path: redisbuild.MustBuild(t)}
	evs := events(
		step{1, 0, args("SET greeting hello"), "+OK\r\n", false},
		step{1, time.Millisecond, args("CONFIG SET bind 0.0.0.0"), "+OK\r\n", false},
		step{1, 2 * time.Millisecond, args("STRLEN greeting"), ":6\r\n", false}, // the build says 5
	)
	tr, err := replay.Run(context.Background(), build, evs, options(tl))
	if err != nil {
		t.Fatal(err)
	}
	rec := replay.Recorded(evs, redis.Integration{})
	v := replay.Verify(rec, nil, tr, replay.Noise{})
	if v.Reproduced || v.FirstDifferent != 3 {
		t.Errorf("reproduced %v, first different %d: want step 3 (STRLEN) different", v.Reproduced, v.FirstDifferent)
	}
	if v.Steps[1].Status != replay.StatusContained {
		t.Errorf("step 2: %s, want contained", v.Steps[1].Status)
	}
	f := &kavach.Failure{Step: 2, Oracle: kavach.Oracle{Kind: kavach.Error}, Signature: "error:ERR kavach: contained (network namespaces unavailable)"}
	v = replay.Verify(rec[:2], f, tr, replay.Noise{})
	if v.Reproduced || v.FirstDifferent != 2 {
		t.Errorf("failure at a contained step: reproduced %v, first different %d: want not reproduced at 2", v.Reproduced, v.FirstDifferent)
	}
}
