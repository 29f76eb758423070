package grade_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/grading"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/launch"
	"github.com/kavach-dev/kavach/record"
	"github.com/kavach-dev/kavach/replay"
)

// runningService starts build as an operator runs a service: on a port of
// its own, persisting nothing, not through Kavach's launcher. It is killed
// when the test ends.
func runningService(t *testing.T, build string, args ...string) string {
	t.Helper()
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(build, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir, "--logfile", filepath.Join(dir, "log")}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("service %s not ready on %s", build, addr)
		}
	}
	return addr
}

// stateTypes are the kinds of keys the service holds, one in seven keys of
// each: key i is of kind i%7.
var stateTypes = []string{"string", "list", "hash", "set", "zset", "stream", "ttl"}

func stateKey(i int) string { return fmt.Sprintf("%s:%d", stateTypes[i%len(stateTypes)], i) }

// fillService writes 10,000 keys of every type, some with a time to live,
// and the incident's string, as a service that has run for a while holds
// them.
func fillService(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	pipe := c.Pipeline()
	for i := range 10000 {
		k := stateKey(i)
		switch i % len(stateTypes) {
		case 0:
			pipe.Set(ctx, k, "v"+strconv.Itoa(i), 0)
		case 1:
			pipe.RPush(ctx, k, "a", i, "c")
		case 2:
			pipe.HSet(ctx, k, "f1", i, "f2", "x")
		case 3:
			pipe.SAdd(ctx, k, "m1", "m2", i)
		case 4:
			pipe.ZAdd(ctx, k, goredis.Z{Score: float64(i), Member: "a"}, goredis.Z{Score: 1.5, Member: "b"})
		case 5:
			pipe.XAdd(ctx, &goredis.XAddArgs{Stream: k, ID: fmt.Sprintf("%d-1", i+1), Values: []string{"f", "v"}})
		case 6:
			pipe.Set(ctx, k, "t"+strconv.Itoa(i), time.Hour)
		}
		if i%500 == 499 {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	pipe.Set(ctx, "greeting", "hello world!", 0)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// stateSession is what a stock client does during the incident: reads 25
// keys of every type and writes 25 others, then the GETRANGE that crashes
// the old build. With direct (the service's own address), a second client
// meanwhile writes to the service directly, not through the proxy: a key
// the session read before and reads again at the end, and the incident's
// string, which the session reads only after it.
func stateSession(t *testing.T, addr, direct string) {
	t.Helper()
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, Protocol: 2})
	defer c.Close()
	greeting := "hello"
	for j := range 25 {
		i, w := 7*j+j%7, 7*(j+100)+j%7
		k, wk := stateKey(i), stateKey(w)
		if direct != "" && j == 9 {
			other := goredis.NewClient(&goredis.Options{Addr: direct, MaxRetries: -1})
			err := firstErr(other.HIncrBy(ctx, stateKey(16), "f1", 1000).Err(), other.Set(ctx, "greeting", "howdy world!", 0).Err())
			other.Close()
			if err != nil {
				t.Fatal(err)
			}
			greeting = "howdy"
		}
		var err error
		switch i % 7 {
		case 0:
			err = c.Get(ctx, k).Err()
			err = firstErr(err, c.Append(ctx, wk, "!").Err())
		case 1:
			err = c.LRange(ctx, k, 0, -1).Err()
			err = firstErr(err, c.RPush(ctx, wk, "d").Err())
		case 2:
			err = c.HGetAll(ctx, k).Err()
			err = firstErr(err, c.HIncrBy(ctx, wk, "f1", 3).Err())
		case 3:
			err = c.SCard(ctx, k).Err()
			err = firstErr(err, c.SAdd(ctx, wk, "m9").Err())
		case 4:
			err = c.ZRangeWithScores(ctx, k, 0, -1).Err()
			err = firstErr(err, c.ZIncrBy(ctx, wk, 2, "b").Err())
		case 5:
			err = c.XRange(ctx, k, "-", "+").Err()
			err = firstErr(err, c.XAdd(ctx, &goredis.XAddArgs{Stream: wk, ID: "99999-1", Values: []string{"g", "w"}}).Err())
		case 6:
			err = c.TTL(ctx, k).Err()
			err = firstErr(err, c.Expire(ctx, wk, 2*time.Hour).Err())
		}
		if err != nil && err != goredis.Nil {
			t.Fatalf("%s, %s: %v", k, wk, err)
		}
	}
	// The hash of step 2 (hash:16, f1 = 16), once more.
	f1 := "16"
	if greeting != "hello" {
		f1 = "1016"
	}
	if got, err := c.HGet(ctx, stateKey(16), "f1").Result(); err != nil || got != f1 {
		t.Fatalf("HGET %s f1: %q, %v; want %s", stateKey(16), got, err, f1)
	}
	if got, err := c.GetRange(ctx, "greeting", 0, 4).Result(); err != nil || got != greeting {
		t.Fatalf("GETRANGE greeting 0 4: %q, %v", got, err)
	}
	if err := c.GetRange(ctx, "greeting", -100, -1).Err(); err == nil {
		t.Fatal("GETRANGE greeting -100 -1 did not crash the old build")
	}
}

func firstErr(a, b error) error {
	if a != nil && a != goredis.Nil {
		return a
	}
	return b
}

// recordRunning records the session through the proxy in front of the
// running service at addr, with its state taken as mode asks.
func recordRunning(t *testing.T, addr, mode string, direct bool) *fixtures.Fixture {
	t.Helper()
	out := filepath.Join(t.TempDir(), "state.kavach")
	s := record.Session{Out: out, Upstream: addr, State: mode}
	grading.SetupRecording(&s, "resp", nil, false, 10*time.Second)
	rec, err := s.Go(context.Background(), "resp")
	if err != nil {
		t.Fatal(err)
	}
	other := ""
	if direct {
		other = addr
	}
	stateSession(t, rec.Addr, other)
	time.Sleep(100 * time.Millisecond) // the crash's close reaches the proxy
	res, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure == nil || res.Failure.Signature != "crash" {
		t.Fatalf("recorded failure %+v, want the crash", res.Failure)
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

// replayOld replays fx on build as kavach replay does, from the state
// the fixture holds, through integration in.
func replayOld(t *testing.T, fx *fixtures.Fixture, build string, in kavach.Integration) (*replay.Trace, error) {
	t.Helper()
	seed, remove, err := fx.OpenSeed()
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	return replay.Run(context.Background(), kavach.Launch{Path: build}, replay.Slice(fx.Events), replay.Options{Integration: in, Start: fx.Header.Start, Seed: seed})
}

// reproduces reports whether a trace has the recording's failure at its
// step and every step before it answered as recorded.
func reproduces(t *testing.T, fx *fixtures.Fixture, tr *replay.Trace) (bool, string) {
	t.Helper()
	recorded := replay.Recorded(fx.Events, redis.Integration{})
	var v replay.Verification
	v.Reproduced = true
	for i, want := range recorded {
		var got replay.StepResult
		if i < len(tr.Steps) {
			got = tr.Steps[i]
		}
		c := replay.CheckStep(want, got, fx.Failure, replay.Noise{}, nil)
		v.Count(c)
		if c.Status != replay.StatusEqual && c.Status != replay.StatusReproduced && c.Status != replay.StatusAfterFailed && c.Status != replay.StatusForeign {
			return false, fmt.Sprintf("step %d %s: %+v", c.Step, c.Status, c.Diffs)
		}
	}
	return v.Reproduced, ""
}

// checkForeign checks the writes of another client in fx: with direct,
// the two writes as Foreign steps of one connection of their own, in the
// order the service ran them, between the proxied steps the service ran
// them between, none marked Unordered; without, none. Where the keys are
// captured at first touch, the write to the string read only after it is
// in its capture, not a step.
func checkForeign(t *testing.T, fx *fixtures.Fixture, direct bool) {
	t.Helper()
	steps := kavach.Steps(fx.Events, redis.Integration{})
	var foreign []kavach.Step
	for _, s := range steps {
		if s.Request.Flags&kavach.Foreign != 0 {
			foreign = append(foreign, s)
		}
	}
	if !direct {
		if len(foreign) != 0 || fx.State.Foreign != 0 {
			t.Fatalf("%d foreign steps (state says %d), want none", len(foreign), fx.State.Foreign)
		}
		return
	}
	desc := func(s kavach.Step) string { return redis.Integration{}.DescribeRequest(s.Request.Data, 100) }
	want := []string{`HINCRBY "hash:16" "f1" "1000"`, `SET "greeting" "howdy world!"`}
	if fx.State.Mode == fixtures.StateFirstTouch {
		want = want[:1]
		if !strings.Contains(fx.State.Note, "1 writes of other clients before the first touch of their keys") {
			t.Errorf("state note %q: want the write to greeting said to be in its capture", fx.State.Note)
		}
	}
	ok := len(foreign) == len(want) && fx.State.Foreign == len(want) && fx.State.Unordered == 0
	for i := 0; ok && i < len(want); i++ {
		ok = desc(foreign[i]) == want[i] && foreign[i].Conn() == foreign[0].Conn()
	}
	if !ok {
		for _, s := range foreign {
			t.Logf("step %d conn %d flags %d: %s", s.N, s.Conn(), s.Request.Flags, desc(s))
		}
		t.Fatalf("state %+v: want %q, in order, on one connection, none unordered", fx.State, want)
	}
	first, last := foreign[0].N, foreign[len(foreign)-1].N
	if before, after := desc(steps[first-2]), desc(steps[last]); before != `RPUSH "list:757" "d"` || after != `HGETALL "hash:65"` {
		t.Errorf("the other client's writes between %s and %s, want between the proxied RPUSH \"list:757\" and HGETALL \"hash:65\" the service ran them between", before, after)
	}
	for _, s := range foreign {
		if s.Request.Offset < 0 || s.Request.Offset > steps[len(steps)-1].Request.Offset {
			t.Errorf("step %d at %v: outside the recording", s.N, s.Request.Offset)
		}
	}
}

// withoutForeign is events with each write of another client replaced by
// a PING on its connection: the steps keep their numbers, the writes are
// gone.
func withoutForeign(events []kavach.Event) []kavach.Event {
	out := slices.Clone(events)
	for i, ev := range out {
		if ev.Dir == kavach.Request && ev.Flags&kavach.Foreign != 0 {
			out[i].Data = []byte("*1\r\n$4\r\nPING\r\n")
		}
	}
	return out
}

// droppingIntegration is Redis with a planted fault in the restore: the
// first key of the state is not restored.
type droppingIntegration struct{ redis.Integration }

func (d droppingIntegration) Abilities() kavach.Abilities {
	ab := d.Integration.Abilities()
	restore := ab.Restore
	ab.Restore = func(ctx context.Context, addr string, keys []kavach.KeyState) error {
		return restore(ctx, addr, keys[1:])
	}
	return ab
}

// TestStateOfARunningService: an incident recorded in front of a service
// that already holds 10,000 keys of every type, as it happens. The fixture
// carries the state the recording reads (cut from the service's snapshot,
// or captured at first touch where the service refuses the replication
// handshake), the old build replays it from that state and reproduces,
// the correct fix is fixed and the narrow fix variant_failed. Planted
// faults: a restore that drops one key is refused before the first step;
// the same fixture replayed from no state does not reproduce.
func TestStateOfARunningService(t *testing.T) {
	b := getBuilds(t)
	for _, tc := range []struct {
		name, mode string
		acl        bool // the recorder's user may not SYNC
		direct     bool // a second client writes to the service directly
		wantMode   string
	}{
		{name: "snapshot", wantMode: fixtures.StateSnapshot},
		{name: "handshake refused", acl: true, wantMode: fixtures.StateFirstTouch},
		{name: "writes of another client", direct: true, wantMode: fixtures.StateSnapshot},
		{name: "writes of another client, handshake refused", direct: true, acl: true, wantMode: fixtures.StateFirstTouch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := runningService(t, b.old)
			fillService(t, addr)
			if tc.acl {
				c := goredis.NewClient(&goredis.Options{Addr: addr})
				err := c.Do(context.Background(), "ACL", "SETUSER", "recorder", "on", ">rec-pass", "~*", "&*", "+@all", "-sync", "-psync").Err()
				c.Close()
				if err != nil {
					t.Fatal(err)
				}
				t.Setenv(redis.EnvUser, "recorder")
				t.Setenv(redis.EnvPassword, "rec-pass")
			}
			fx := recordRunning(t, addr, tc.mode, tc.direct)
			st := fx.State
			if st == nil || st.Mode != tc.wantMode || st.Whole || fx.Header.State != tc.wantMode {
				t.Fatalf("state %+v (header %q): want %s, cut to the keys named", st, fx.Header.State, tc.wantMode)
			}
			// 25 read, 25 written, and the incident's string.
			if st.Keys != 51 || len(fx.StateKeys) != 51 {
				t.Fatalf("state holds %d keys (%d records), want 51: %s", st.Keys, len(fx.StateKeys), st.Note)
			}
			if tc.acl && !strings.Contains(st.Note, "refused") {
				t.Errorf("state note %q: want the refusal said", st.Note)
			}
			checkForeign(t, fx, tc.direct)

			tr, err := replayOld(t, fx, b.old, redis.Integration{})
			if err != nil {
				t.Fatal(err)
			}
			if ok, why := reproduces(t, fx, tr); !ok {
				t.Fatalf("the old build from the fixture's state does not reproduce: %s", why)
			}
			if tc.direct {
				// Planted: the other client's writes left out of the
				// replay (their steps sent as nothing).
				blind := *fx
				blind.Events = withoutForeign(fx.Events)
				if tr, err := replayOld(t, &blind, b.old, redis.Integration{}); err != nil {
					t.Fatal(err)
				} else if ok, _ := reproduces(t, fx, tr); ok {
					t.Fatal("replayed without the other client's writes, the incident still reproduces: the test proves nothing")
				}
			}
			// Planted: a restore that loses one key is caught before any
			// step runs.
			if _, err := replayOld(t, fx, b.old, droppingIntegration{}); err == nil || !strings.Contains(err.Error(), "not restored whole") {
				t.Fatalf("replay with a key dropped from the restore: %v, want it refused", err)
			}
			// Planted: no state at all (as before fixtures held it).
			empty := *fx
			empty.State, empty.StateKeys = nil, nil
			if tr, err := replayOld(t, &empty, b.old, redis.Integration{}); err != nil {
				t.Fatal(err)
			} else if ok, _ := reproduces(t, fx, tr); ok {
				t.Fatal("replayed from no state, the incident still reproduces: the test proves nothing")
			}
			// Graded without its state, the fixture is said to lack it,
			// at the first read the old build's replays all answer
			// otherwise: never noise, never a verdict on the new build.
			if rep := diff(t, &empty, b.old, b.pristine, 10); !strings.HasPrefix(rep.Verdict, "unverified(missing-state: step ") {
				t.Errorf("correct fix on the fixture without its state: %s, want unverified(missing-state: …)", rep.Verdict)
			}

			if rep := diff(t, fx, b.old, b.pristine, 10); rep.Verdict != "fixed" {
				t.Errorf("correct fix: %s, want fixed\nfindings: %+v", rep.Verdict, rep.Findings)
			}
			if rep := diff(t, fx, b.old, b.narrow, 10); !strings.HasPrefix(rep.Verdict, "variant_failed(") {
				t.Errorf("narrow fix: %s, want variant_failed(…)\nfindings: %+v", rep.Verdict, rep.Findings)
			}
		})
	}
}
