package replay_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/launch"
	"github.com/kavach-dev/kavach/replay"
)

// checkpointRecording is a prefix that leaves state of several kinds
// (a counter, a key with a time to live, a hash, a list) and a suffix on a
// connection of its own that reads all of it, 50 ms later.
func checkpointRecording() (prefix, suffix, whole []kavach.Event) {
	ms := time.Millisecond
	var r recording
	r.add(1, kavach.Open, 0, nil)
	r.request(1, 1*ms, "SET a 1", 1*ms, "+OK\r\n")
	r.request(1, 2*ms, "INCR a", 2*ms, ":2\r\n")
	r.request(1, 3*ms, "SET t x EX 100", 3*ms, "+OK\r\n")
	r.request(1, 4*ms, "HSET h f v", 4*ms, ":1\r\n")
	r.request(1, 5*ms, "RPUSH l x y", 5*ms, ":2\r\n")
	r.add(2, kavach.Open, 50*ms, nil)
	r.request(2, 50*ms, "INCR a", 50*ms, ":3\r\n")
	r.request(2, 51*ms, "PTTL t", 51*ms, ":99952\r\n")
	r.request(2, 52*ms, "HGET h f", 52*ms, "$1\r\nv\r\n")
	r.request(2, 53*ms, "LRANGE l 0 -1", 53*ms, "*2\r\n$1\r\nx\r\n$1\r\ny\r\n")
	r.request(2, 54*ms, "DBSIZE", 54*ms, ":4\r\n")
	whole = r.sorted()
	for _, ev := range whole {
		if ev.Conn == 1 {
			prefix = append(prefix, ev)
		} else {
			suffix = append(suffix, ev)
		}
	}
	return prefix, suffix, whole
}

// TestCheckpointAnswersAsTheWholeReplay: a build started from the state a
// replay of the prefix saved answers the steps after it as the build that
// replayed everything in one run did, at the same virtual times (a time
// to live counted down by the clock, not by how long the save took).
// And a checkpoint that lost a key on the way (a fault planted in the
// save, after the keys were counted) is refused when a build starts from
// it, saying how many keys it holds against how many were saved. On a
// build from source and on Debian's packaged server (jemalloc).
func TestCheckpointAnswersAsTheWholeReplay(t *testing.T) {
	if _, err := os.Stat("/usr/bin/redis-server"); err != nil {
		t.Fatalf("Debian's redis-server is not installed (scripts/deps.sh installs it): %v", err)
	}
	for name, path := range map[string]string{"source": redisbuild.MustBuild(t), "debian": "/usr/bin/redis-server"} {
		t.Run(name, func(t *testing.T) { checkpointAnswersAsTheWholeReplay(t, kavach.Launch{Path: path}) })
	}
}

func checkpointAnswersAsTheWholeReplay(t *testing.T, build kavach.Launch) {
	prefix, suffix, whole := checkpointRecording()
	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	ctx := context.Background()

	all, err := replay.Run(ctx, build, whole, options(tl))
	if err != nil {
		t.Fatal(err)
	}
	if all.Stopped != "" || all.Clock != "virtual" {
		t.Fatalf("whole replay: stopped %q, clock %q", all.Stopped, all.Clock)
	}
	ckpt := filepath.Join(t.TempDir(), "prefix.rdb")
	seed, pre, err := replay.Checkpoint(ctx, build, prefix, options(tl), ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if len(pre.Steps) != 5 {
		t.Fatalf("the prefix's replay ran %d steps, want 5", len(pre.Steps))
	}
	if diff := cmp.Diff(map[int]int{0: 4}, seed.Held); diff != "" {
		t.Fatalf("keys counted at the save (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(ckpt); err != nil || fi.Size() == 0 {
		t.Fatalf("checkpoint file: %v, %v", fi, err)
	}

	opts := options(tl)
	opts.Seed = seed
	from, err := replay.Run(ctx, build, suffix, opts)
	if err != nil {
		t.Fatal(err)
	}
	if from.Stopped != "" || len(from.Steps) != 5 {
		t.Fatalf("replay from the checkpoint: stopped %q, %d steps", from.Stopped, len(from.Steps))
	}
	for i, s := range from.Steps {
		want := all.Steps[5+i]
		if diff := cmp.Diff(want.Output, s.Output); diff != "" {
			t.Errorf("step %d after the checkpoint answers otherwise than in the whole replay (-whole +from checkpoint):\n%s", i+1, diff)
		}
	}
	if got := string(from.Steps[1].Responses[0]); got != ":99952\r\n" {
		t.Errorf("PTTL from the checkpoint = %q, want the recorded :99952 (the virtual clock, not the save's time)", got)
	}

	// A fault planted in the save: a key dropped after the keys were
	// counted. The build started from it holds one key fewer.
	lossy := filepath.Join(t.TempDir(), "lossy.rdb")
	bad, _, err := replay.Checkpoint(ctx, build, prefix, options(&dropOnSave{Integration: tl, key: "h"}), lossy)
	if err != nil {
		t.Fatal(err)
	}
	opts.Seed = bad
	_, err = replay.Run(ctx, build, suffix, opts)
	if err == nil || !strings.Contains(err.Error(), "holds 3 keys in database 0 where the saved state holds 4") {
		t.Fatalf("a replay from a checkpoint that lost a key: err = %v, want it refused for holding 3 keys of 4", err)
	}
}

// TestCheckpointOfACrashIsRefused: a replay in which the build dies has
// no state to save: Checkpoint says why and leaves no file.
func TestCheckpointOfACrashIsRefused(t *testing.T) {
	build := kavach.Launch{Path: redisbuild.MustBuild(t), Args: []string{"--enable-debug-command", "local"}}
	var r recording
	r.add(1, kavach.Open, 0, nil)
	r.request(1, time.Millisecond, "SET a 1", time.Millisecond, "+OK\r\n")
	r.request(1, 2*time.Millisecond, "DEBUG SEGFAULT", 2*time.Millisecond, "")
	tl := &tracker{Integration: redis.Integration{}}
	defer tl.checkGone(t)
	path := filepath.Join(t.TempDir(), "crash.rdb")
	_, _, err := replay.Checkpoint(context.Background(), build, r.sorted(), options(tl), path)
	if err == nil || !strings.Contains(err.Error(), "checkpoint of build") {
		t.Fatalf("err = %v, want a checkpoint error", err)
	}
	if _, serr := os.Stat(path); !os.IsNotExist(serr) {
		t.Errorf("a failed checkpoint left %s behind (%v)", path, serr)
	}
}

// dropOnSave is the integration with a fault planted in its save: key is
// deleted from the build right before the data file is written.
type dropOnSave struct {
	kavach.Integration
	key string
}

func (d *dropOnSave) Abilities() kavach.Abilities {
	ab := d.Integration.Abilities()
	save := ab.SaveData
	ab.SaveData = func(ctx context.Context, addr string, dst io.Writer) (int64, error) {
		c, err := launch.Dial(ctx, addr) // the build's own network, where it has one
		if err != nil {
			return 0, err
		}
		defer c.Close()
		if _, err := c.Write(redis.AppendCommand(nil, []byte("DEL"), []byte(d.key))); err != nil {
			return 0, err
		}
		if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
			return 0, err
		}
		return save(ctx, addr, dst)
	}
	return ab
}
