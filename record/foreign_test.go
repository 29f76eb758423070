package record_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/launch"
	"github.com/kavach-dev/kavach/record"
)

// feed is a service's feed of the commands it ran, played by the test: a
// small fake of kavach.Watcher, so that the order in which the feed shows
// proxied requests and another client's writes is the test's to choose.
// The proxy in front of it and the service are real.
type feed struct {
	ch   chan kavach.Ran
	done chan struct{}
	once sync.Once
}

func newFeed() *feed { return &feed{ch: make(chan kavach.Ran, 16), done: make(chan struct{})} }

func (f *feed) Next() (kavach.Ran, error) {
	select {
	case r := <-f.ch:
		return r, nil
	case <-f.done:
		return kavach.Ran{}, net.ErrClosed
	}
}

func (f *feed) Keys(request []byte) ([][]byte, bool) {
	c, err := redis.ParseCommand(request)
	if err != nil || len(c.Args) < 2 {
		return nil, false
	}
	return c.Args[1:2], true
}

func (f *feed) Close() error { f.once.Do(func() { close(f.done) }); return nil }

// ran is the feed's line for args, run by the client at origin.
func ran(origin string, args ...string) kavach.Ran {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	req := redis.AppendCommand(nil, b...)
	name := strings.ToUpper(args[0])
	return kavach.Ran{Time: time.Now(), Origin: origin, Request: req, Keys: b[1:2], KeysKnown: true,
		Write: name == "SET" || name == "LPUSH" || name == "BLPOP", Blocking: name == "BLPOP",
		Same: func(r []byte) bool { return bytes.Equal(r, req) }}
}

// client is one connection through the proxy, sending one command at a
// time.
type client struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialClient(t *testing.T, addr string) *client {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

func (c *client) do(args ...string) {
	c.t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if _, err := c.c.Write(redis.AppendCommand(nil, b...)); err != nil {
		c.t.Fatal(err)
	}
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.br.ReadBytes('\n'); err != nil {
		c.t.Fatal(err)
	}
	if args[0] == "GET" {
		c.br.ReadBytes('\n') // the bulk's payload
	}
}

// proxiedOrigin is the address the service sees the proxy's connection
// come from, as the service says it (CLIENT LIST).
func proxiedOrigin(t *testing.T, upstream string) string {
	t.Helper()
	conn, err := launch.Dial(context.Background(), upstream) // the build may run in a namespace of its own
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(redis.AppendCommand(nil, []byte("CLIENT"), []byte("LIST")))
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	n, _ := conn.Read(buf)
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		if strings.Contains(line, "cmd=client|list") || !strings.Contains(line, " addr=") {
			continue
		}
		addr, _, _ := strings.Cut(line[strings.Index(line, " addr=")+6:], " ")
		return addr
	}
	t.Fatalf("no proxied client in CLIENT LIST: %q", buf[:n])
	return ""
}

// TestWritesOfAnotherClientWhereTheServiceRanThem: the feed shows the
// proxied SET, then another client's write, then the proxied GET: the
// fixture has the write as a Foreign step of a connection of its own
// between them, and the failure marked later is at its step counted with
// the write (the proxy counted it before the write was placed).
func TestWritesOfAnotherClientWhereTheServiceRanThem(t *testing.T) {
	up := startRedis(t).Addr()
	fd := newFeed()
	rec := startRecording(t, up, func(o *record.Options) { o.FailOn = &kavach.Oracle{Kind: kavach.Error} })
	rec.proxy.Watch(record.WatchOptions{Watcher: fd})
	c := dialClient(t, rec.addr())
	c.do("SET", "k", "1")
	origin := proxiedOrigin(t, up)
	fd.ch <- ran(origin, "SET", "k", "1")
	fd.ch <- ran("10.0.0.9:5000", "SET", "k", "2")
	c.do("GET", "k")
	fd.ch <- ran(origin, "GET", "k")
	c.do("LPUSH", "k", "x") // WRONGTYPE: the failure
	fd.ch <- ran(origin, "LPUSH", "k", "x")
	// The feed is read on a goroutine of its own: until it has placed the
	// other client's write, the failure is counted without it (step 3).
	f := rec.proxy.Failure()
	for deadline := time.Now().Add(5 * time.Second); (f == nil || f.Step != 4) && time.Now().Before(deadline); f = rec.proxy.Failure() {
		time.Sleep(10 * time.Millisecond)
	}
	if f == nil || f.Step != 4 {
		t.Fatalf("failure %+v while recording, want step 4", f)
	}
	c.c.Close()
	rec.idle()
	fx := rec.finish()
	steps := kavach.Steps(fx.Events, redis.Integration{})
	got := commands(fx)
	want := []string{`SET "k" "1" -> OK`, `SET "k" "2" ->`, `GET "k" -> "1"`, `LPUSH "k" "x" -> (error) WRONGTYPE`}
	if len(got) != len(want) {
		t.Fatalf("steps %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("step %d: %q, want %q", i+1, got[i], want[i])
		}
	}
	if f := steps[1].Request.Flags; f != kavach.Foreign || steps[1].Conn() == steps[0].Conn() {
		t.Errorf("the other client's write: flags %d on conn %d, want Foreign on a connection of its own", f, steps[1].Conn())
	}
	if fx.Failure == nil || fx.Failure.Step != 4 {
		t.Errorf("failure in the fixture %+v, want step 4", fx.Failure)
	}
	if fs, _ := rec.proxy.Foreign(); fs.Written != 1 || fs.Unordered != 0 {
		t.Errorf("foreign stats %+v, want 1 written, none unordered", fs)
	}
}

// TestAWriteCrossingAProxiedRequestIsUnordered: a proxied GET the feed
// does not show within the hold (so it is written), then another client's
// write to its key: the service may have run either first. The write is
// marked Unordered, and the GET and the later read of the key (not the
// read of another key) are steps of an order not known.
func TestAWriteCrossingAProxiedRequestIsUnordered(t *testing.T) {
	up := startRedis(t).Addr()
	fd := newFeed()
	rec := startRecording(t, up, nil)
	rec.proxy.Watch(record.WatchOptions{Watcher: fd})
	c := dialClient(t, rec.addr())
	c.do("GET", "k")
	origin := proxiedOrigin(t, up)
	time.Sleep(1500 * time.Millisecond) // past the hold: the GET is written
	fd.ch <- ran("10.0.0.9:5000", "SET", "k", "2")
	c.do("GET", "k")
	fd.ch <- ran(origin, "GET", "k")
	fd.ch <- ran(origin, "GET", "k")
	c.do("GET", "other")
	fd.ch <- ran(origin, "GET", "other")
	deadline := time.Now().Add(5 * time.Second)
	for fs, _ := rec.proxy.Foreign(); fs.Written == 0 && time.Now().Before(deadline); fs, _ = rec.proxy.Foreign() {
		time.Sleep(10 * time.Millisecond)
	}
	c.c.Close()
	rec.idle()
	unknown := rec.proxy.OrderUnknown()
	fx := rec.finish()
	steps := kavach.Steps(fx.Events, redis.Integration{})
	if len(steps) != 4 || steps[1].Request.Flags != kavach.Foreign|kavach.Unordered {
		t.Fatalf("steps %q (the write's flags %d), want the write second, Foreign and Unordered", commands(fx), steps[1].Request.Flags)
	}
	if !slices.Equal(unknown, []int{1, 3}) {
		t.Errorf("steps of an order not known %v, want [1 3] (the crossed GET k and the later GET k, not GET other)", unknown)
	}
	if fs, _ := rec.proxy.Foreign(); fs.Written != 1 || fs.Unordered != 1 {
		t.Errorf("foreign stats %+v, want 1 written, 1 unordered", fs)
	}
}

// TestAnotherClientsBlockingPop: another client's BLPOP is not written
// (what it takes once woken is not in the feed), and the later reads of
// its key, not of another, are of an order not known.
func TestAnotherClientsBlockingPop(t *testing.T) {
	up := startRedis(t).Addr()
	fd := newFeed()
	rec := startRecording(t, up, nil)
	rec.proxy.Watch(record.WatchOptions{Watcher: fd})
	c := dialClient(t, rec.addr())
	c.do("SET", "other", "1")
	origin := proxiedOrigin(t, up)
	fd.ch <- ran(origin, "SET", "other", "1")
	fd.ch <- ran("10.0.0.9:5000", "BLPOP", "q", "0")
	c.do("GET", "q") // a string read of a list: WRONGTYPE or nothing, it does not matter
	fd.ch <- ran(origin, "GET", "q")
	c.do("GET", "other")
	fd.ch <- ran(origin, "GET", "other")
	c.c.Close()
	rec.idle()
	unknown := rec.proxy.OrderUnknown()
	fs, _ := rec.proxy.Foreign()
	fx := rec.finish()
	if len(commands(fx)) != 3 || fs.Blocking != 1 || fs.Written != 0 {
		t.Fatalf("steps %q, stats %+v: want the three proxied steps, the BLPOP counted and not written", commands(fx), fs)
	}
	if !slices.Equal(unknown, []int{2}) {
		t.Errorf("steps of an order not known %v, want [2] (GET q)", unknown)
	}
}

// TestTheFeedEndingIsNoError: a feed that fails (the service closed it)
// ends the watch and is said, and the recording goes on.
func TestTheFeedEndingIsNoError(t *testing.T) {
	up := startRedis(t).Addr()
	fd := &failingFeed{feed: newFeed()}
	rec := startRecording(t, up, nil)
	rec.proxy.Watch(record.WatchOptions{Watcher: fd})
	c := dialClient(t, rec.addr())
	c.do("SET", "k", "1")
	c.c.Close()
	rec.idle()
	_, why := rec.proxy.Foreign()
	fx := rec.finish()
	if len(commands(fx)) != 1 || !strings.Contains(why, "feed broke") {
		t.Errorf("steps %q, watch ended %q: want the step recorded and the break said", commands(fx), why)
	}
}

type failingFeed struct{ *feed }

func (f *failingFeed) Next() (kavach.Ran, error) { return kavach.Ran{}, errors.New("feed broke") }
