package record_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/internal/syncbuf"
	"github.com/kavach-dev/kavach/record"
)

// keepSession is an always-on recording in front of srv into dir, cutting
// on WRONGTYPE errors.
func keepSession(t *testing.T, srv kavach.Process, dir string, keep record.Keep) *record.Running {
	t.Helper()
	failOn, err := kavach.ParseOracle("error:WRONGTYPE")
	if err != nil {
		t.Fatal(err)
	}
	s := record.Session{
		Out: dir, Upstream: srv.Addr(), State: fixtures.StateNone, Keep: &keep,
		Proxy: record.Options{Codec: redis.Integration{}, FailOn: &failOn},
	}
	r, err := s.Go(context.Background(), redis.Protocol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop() })
	return r
}

// cutsIn lists the cut fixtures in dir, and fails on anything else there
// but the segments' directory and a cut being written.
func cutsIn(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cuts []string
	for _, e := range ents {
		switch {
		case strings.HasPrefix(e.Name(), ".segments-") && e.IsDir():
		case strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".tmp"): // a cut being written
		case strings.HasSuffix(e.Name(), fixtures.Ext) && !strings.HasPrefix(e.Name(), "."):
			cuts = append(cuts, filepath.Join(dir, e.Name()))
		default:
			t.Fatalf("unexpected file in the cuts directory: %s", e.Name())
		}
	}
	return cuts
}

// waitCuts waits until dir holds n cuts.
func waitCuts(t *testing.T, dir string, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cuts := cutsIn(t, dir); len(cuts) >= n {
			return cuts
		}
	}
	t.Fatalf("no %d cuts in %s after 30 s: %v", n, dir, cutsIn(t, dir))
	return nil
}

// TestKeepCutsEachFailure: in front of a real redis-server, one client
// connection sends traffic, pauses for longer than --keep, sends more and
// trips a --fail-on error; the cut holds the connection (opened at its
// start), the steps after the pause and the failure marked, and nothing
// before the pause. A second failure later gives a second cut holding
// only its own stretch. When the recording stops, only the cuts are left.
func TestKeepCutsEachFailure(t *testing.T) {
	srv := startRedis(t)
	dir := filepath.Join(t.TempDir(), "cuts")
	keep := time.Second
	r := keepSession(t, srv, dir, record.Keep{Duration: keep, After: 300 * time.Millisecond})
	c := dialClient(t, r.Addr)
	var sent []string
	do := func(args ...string) {
		c.do(args...)
		sent = append(sent, strings.Join(args, " "))
	}
	for i := range 50 {
		do("SET", fmt.Sprintf("old:%d", i), "v")
	}
	time.Sleep(2 * keep) // the traffic above is out of the kept stretch
	before := len(sent)
	for i := range 10 {
		do("SET", fmt.Sprintf("new:%d", i), "v")
	}
	do("SET", "s", "x")
	do("LPUSH", "s", "y") // WRONGTYPE: the failure
	failAt := len(sent)
	do("SET", "after", "v")
	cut1 := waitCuts(t, dir, 1)[0]
	checkCut(t, cut1, sent[before:], failAt-before)

	time.Sleep(2 * keep)
	before = len(sent)
	do("SET", "t", "x")
	do("LPUSH", "t", "y")
	failAt = len(sent)
	cuts := waitCuts(t, dir, 2)
	if cuts[0] != cut1 {
		t.Fatalf("cuts: %v, the first was %s", cuts, cut1)
	}
	checkCut(t, cuts[1], sent[before:], failAt-before)

	res, err := r.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cuts) != 2 || res.Cuts[0] != cuts[0] || res.Cuts[1] != cuts[1] {
		t.Fatalf("result's cuts %v, want %v", res.Cuts, cuts)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("after the recording, the cuts directory holds %d entries, want the 2 cuts", len(ents))
	}
}

// checkCut checks that the cut at path holds the steps want (a prefix of
// them at least: what came after the failure may be cut short), in order
// and nothing before, its failure at step failAt, and that the connection
// open when it starts is opened at offset zero.
func checkCut(t *testing.T, path string, want []string, failAt int) {
	t.Helper()
	fx, err := fixtures.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Warning != nil {
		t.Fatalf("cut %s: %v", path, fx.Warning)
	}
	if len(fx.Events) == 0 || fx.Events[0].Dir != kavach.Open || fx.Events[0].Offset != 0 {
		t.Fatalf("cut %s does not start with its connection opened at offset 0: %+v", path, fx.Events[:min(1, len(fx.Events))])
	}
	var got []string
	for _, s := range kavach.Steps(fx.Events, redis.Integration{}) {
		got = append(got, strings.TrimSpace(redis.Integration{}.DescribeRequest(s.Request.Data, 0)))
		if len(s.Responses) != 1 {
			t.Fatalf("cut %s: step %d (%s) has %d replies, want 1", path, len(got), got[len(got)-1], len(s.Responses))
		}
	}
	if len(got) < failAt || len(got) > len(want) {
		t.Fatalf("cut %s holds %d steps, want %d to %d:\n%s", path, len(got), failAt, len(want), strings.Join(got, "\n"))
	}
	for i, g := range got {
		if !strings.EqualFold(strings.ReplaceAll(g, `"`, ""), want[i]) {
			t.Fatalf("cut %s: step %d is %q, want %q; steps:\n%s", path, i+1, g, want[i], strings.Join(got, "\n"))
		}
	}
	f := fx.Failure
	if f == nil || f.Step != failAt || !strings.Contains(f.Signature, "WRONGTYPE") {
		t.Fatalf("cut %s: failure %+v, want step %d WRONGTYPE", path, f, failAt)
	}
	if fx.End == nil {
		t.Fatalf("cut %s has no end record", path)
	}
}

// TestKeepOnAFullDisk: the cuts directory is a small tmpfs, filled up
// before a failure. The cut fails with the disk's error, logged; every
// request sent meanwhile is answered right (the proxy forwards whatever
// its files do); no temporary file is left. Once there is room again, the
// next failure is cut whole. Stop reports the cut that failed.
func TestKeepOnAFullDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cuts")
	os.Mkdir(dir, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	srv := startRedis(t)
	failOn, _ := kavach.ParseOracle("error:WRONGTYPE")
	var log syncbuf.Buffer
	s := record.Session{
		Out: dir, Upstream: srv.Addr(), State: fixtures.StateNone, Keep: &record.Keep{Duration: time.Second, After: 100 * time.Millisecond},
		Proxy: record.Options{Codec: redis.Integration{}, FailOn: &failOn, Logger: slog.New(slog.NewTextHandler(&log, nil))},
	}
	r, err := s.Go(context.Background(), redis.Protocol)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	c := dialClient(t, r.Addr)
	traffic := func(n int) {
		for i := range n {
			key, val := fmt.Sprintf("k:%d", i), strings.Repeat("v", 100+i)
			c.do("SET", key, val)
			if got := c.get(key); got != val {
				t.Fatalf("GET %s through the proxy: %q, want %q", key, got, val)
			}
		}
	}
	traffic(50)
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 64<<10)); err != nil {
			break // the disk is full
		}
	}
	f.Close()
	c.do("SET", "s", "x")
	c.do("LPUSH", "s", "y")
	for !strings.Contains(log.String(), "keep: cut") {
		traffic(20) // answered right while the cut fails
	}
	if !strings.Contains(log.String(), "no space left on device") {
		t.Fatalf("the failed cut's log does not say the disk is full:\n%s", log.String())
	}
	if cuts, _ := filepath.Glob(filepath.Join(dir, "*"+fixtures.Ext)); len(cuts) != 0 {
		t.Fatalf("a cut on a full disk: %v", cuts)
	}
	os.Remove(filler)
	time.Sleep(1500 * time.Millisecond) // the failure's stretch, written while the disk was full, is past
	traffic(20)
	c.do("LPUSH", "s", "z")
	cut := waitCuts(t, dir, 1)[0]
	fx, err := fixtures.Load(cut)
	if err != nil || fx.Warning != nil || fx.Failure == nil || !strings.Contains(fx.Failure.Signature, "WRONGTYPE") {
		t.Fatalf("the cut once there is room: %v, %+v", err, fx)
	}
	if _, err := r.Stop(); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Stop: %v, want the failed cut's error", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("a temporary file is left: %s", e.Name())
		}
	}
}

// get sends GET key and returns the bulk string's payload.
func (c *client) get(key string) string {
	c.t.Helper()
	c.c.Write(redis.AppendCommand(nil, []byte("GET"), []byte(key)))
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	head, err := c.br.ReadString('\n')
	if err != nil {
		c.t.Fatal(err)
	}
	if !strings.HasPrefix(head, "$") || head == "$-1\r\n" {
		return head
	}
	body, err := c.br.ReadString('\n')
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.TrimSuffix(body, "\r\n")
}

// TestKeepBytesBoundsTheDisk: with --keep-bytes 8 MiB and 48 MiB of
// values that do not compress sent through the recorder, the segments
// never take more than the bound on disk (sampled while the traffic
// runs), and a cut asked for at the end holds the last requests, not the
// first.
func TestKeepBytesBoundsTheDisk(t *testing.T) {
	srv := startRedis(t)
	dir := filepath.Join(t.TempDir(), "cuts")
	const bound = 8 << 20
	cut := make(chan struct{}, 1)
	s := record.Session{
		Out: dir, Upstream: srv.Addr(), State: fixtures.StateNone, Keep: &record.Keep{Bytes: bound, Cut: cut},
		Proxy: record.Options{Codec: redis.Integration{}},
	}
	r, err := s.Go(context.Background(), redis.Protocol)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	stop, most := make(chan struct{}), make(chan int64)
	go func() {
		var max int64
		for {
			select {
			case <-stop:
				most <- max
				return
			default:
			}
			segs, _ := filepath.Glob(filepath.Join(dir, ".segments-*", "*"))
			var total int64
			for _, p := range segs {
				if st, err := os.Stat(p); err == nil {
					total += st.Size()
				}
			}
			max = maxOf(max, total)
			time.Sleep(time.Millisecond)
		}
	}()
	c := dialClient(t, r.Addr)
	value := make([]byte, 64<<10)
	x := uint32(1)
	for i := range 768 {
		for j := range value {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			value[j] = byte(x)
		}
		c.do("SET", fmt.Sprintf("big:%d", i), string(value))
	}
	close(stop)
	if m := <-most; m > bound {
		t.Errorf("the segments took %d bytes on disk, over the bound of %d", m, bound)
	}
	cut <- struct{}{}
	fx, err := fixtures.Load(waitCuts(t, dir, 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	steps := kavach.Steps(fx.Events, redis.Integration{})
	first := redis.Integration{}.DescribeRequest(steps[0].Request.Data, 40)
	last := redis.Integration{}.DescribeRequest(steps[len(steps)-1].Request.Data, 40)
	if !strings.Contains(last, "big:767") || strings.Contains(first, `"big:0"`) || len(steps) > bound/len(value) {
		t.Errorf("the cut holds %d steps, %s to %s: want the last ones, within the bound", len(steps), first, last)
	}
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
