package replay_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/redisbuild"
	"github.com/kavach-dev/kavach/replay"
)

func TestZZSettleStress(t *testing.T) {
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
	const rounds = 300
	for i := 1; i <= rounds; i++ {
		at := time.Duration(i)*time.Second + 100*ms
		request(1, at, "OBJECT IDLETIME k", ":1\r\n")
		request(1, at+ms, "SET k v", "+OK\r\n")
	}
	slices.SortStableFunc(rec, func(a, b kavach.Event) int { return int(a.Offset - b.Offset) })
	for i := range rec {
		rec[i].Seq = uint64(i + 1)
	}
	if os.Getenv("ZZSTRESS") != "" {
		load := exec.Command("stress-ng", "--cpu", "0", "--timeout", "600s", "--quiet")
		load.Start()
		defer func() { load.Process.Kill(); load.Wait() }()
		time.Sleep(200 * time.Millisecond)
	}
	tl := &tracker{Integration: redis.Integration{}}
	bad := 0
	for run := range 6 {
		opts := options(tl)
		opts.Perturb = run%2 == 1
		began := time.Now()
		tr, err := replay.Run(context.Background(), kavach.Launch{Path: build}, rec, opts)
		if err != nil {
			t.Fatal(err)
		}
		for n := 2; n < len(tr.Steps); n += 2 {
			if got := reply(tr, n); got != "(integer) 1" {
				bad++
				t.Logf("run %d perturbed %v: step %d (round %d) = %s", run, opts.Perturb, n, n/2, got)
			}
		}
		t.Logf("run %d: %v", run, time.Since(began))
	}
	t.Logf("bad %d of %d", bad, 6*rounds)
	_ = strconv.Itoa
}
