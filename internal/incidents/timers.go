package incidents

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/record"
)

// Timer builds: blocking timeouts that fire a second late, or at half
// their time, and OBJECT IDLETIME one more than it is.
var (
	TimeoutLate  = []string{"block-timeout-late.patch"}
	TimeoutEarly = []string{"block-timeout-early.patch"}
	IdlePlusOne  = []string{"idletime-plus-one.patch"}
)

// TimerScenario is a session made with stock clients whose answers depend
// on the server's own timers, and the step (by its command) at which a
// build whose timers fire late, or early, first differs from a recording
// of it made on the stock build.
type TimerScenario struct {
	Name    string
	Clients func(addr string) error
	Late    string // first differing command on the late build; "" none
	Early   string // first differing command on the early build; "" none
}

// TimerScenarios are the sessions of the timer and blocking tests.
var TimerScenarios = []TimerScenario{
	{
		// BLPOP on a list nothing is pushed to, as a one-second timer; the
		// same connection writes when it fires, another reads that later.
		Name: "BLPOP as a timer",
		Clients: func(addr string) error {
			c, done := connect(addr, 1)
			defer done()
			b := c[0]
			out, err := redisCLI(addr, "BLPOP timer 1", "SET after v EX 100")
			// Read once the SET is done: a fixed delay is outrun by a
			// loaded machine. The late build's SET comes at 2 s, after it.
			b.TTL(context.Background(), "after")
			if err == nil && !strings.Contains(out, "OK") {
				err = fmt.Errorf("redis-cli said %q", out)
			}
			return err
		},
		Late: "TTL",
	},
	{
		// A blocked pop woken by a later write on another connection.
		Name: "BLPOP woken by LPUSH",
		Clients: func(addr string) error {
			c, done := connect(addr, 2)
			defer done()
			a, b, ctx := c[0], c[1], context.Background()
			// Margins of half a second both ways, for a loaded machine: the
			// early build times out at 1 s, the stock one at 2 s.
			pushed := after(1500*time.Millisecond, func() { b.LPush(ctx, "q", "j") })
			a.BLPop(ctx, 2*time.Second, "q")
			pushed()
			time.Sleep(200 * time.Millisecond)
			b.LLen(ctx, "q")
			a.Set(ctx, "done", "1", 0)
			return nil
		},
		Early: "BLPOP",
	},
	{
		Name: "XREAD BLOCK",
		Clients: func(addr string) error {
			c, done := connect(addr, 2)
			defer done()
			a, b, ctx := c[0], c[1], context.Background()
			a.XRead(ctx, &goredis.XReadArgs{Streams: []string{"s", "$"}, Block: 800 * time.Millisecond})
			a.Set(ctx, "after", "v", 100*time.Second)
			// Read on the other connection once the SET is done; the late
			// build's SET comes at 1.8 s, after it.
			b.TTL(ctx, "after")
			return nil
		},
		Late: "TTL",
	},
	{
		// WAIT for a replica that does not exist: it answers 0 when its
		// timeout fires.
		Name: "WAIT",
		Clients: func(addr string) error {
			c, done := connect(addr, 2)
			defer done()
			a, b, ctx := c[0], c[1], context.Background()
			a.Do(ctx, "WAIT", "1", "500")
			a.Set(ctx, "after", "v", 100*time.Second)
			// Read on the other connection once the SET is done (a fixed
			// delay is outrun by a loaded machine); the late build's SET
			// comes at 1.5 s, after it.
			b.TTL(ctx, "after")
			return nil
		},
		Late: "TTL",
	},
	{
		// CLIENT PAUSE holds another client's write until it ends.
		Name: "CLIENT PAUSE",
		Clients: func(addr string) error {
			cs, done := connect(addr, 3)
			defer done()
			a, b, c, ctx := cs[0], cs[1], cs[2], context.Background()
			a.Do(ctx, "CLIENT", "PAUSE", "800", "WRITE")
			time.Sleep(100 * time.Millisecond)
			b.Set(ctx, "p", "1", 0)
			b.Set(ctx, "after", "v", 100*time.Second)
			// A read, which the pause does not hold, once the SET is done;
			// on the late build the pause ends a second later.
			c.TTL(ctx, "after")
			return nil
		},
		Late: "TTL",
	},
	{
		// Answers made of the clock right after a multi-second gap. The gap
		// keeps TTL away from its rounding edge: TTL answers
		// (ms left + 500) / 1000, so after exactly 2.5 s of a 100 s expiry
		// it flips between 98 and 97 on a millisecond, and the proxy only
		// knows when a request reached the server to within its own
		// latency (on a loaded machine, a millisecond or more): such a
		// recording is rightly noise there, not a replay fault.
		Name: "OBJECT IDLETIME and TTL after a gap",
		Clients: func(addr string) error {
			c, done := connect(addr, 1)
			defer done()
			a, ctx := c[0], context.Background()
			// OBJECT IDLETIME counts whole seconds of the clock: start a
			// tenth of a second into one, so that no answer sits within
			// the proxy's latency of a second's edge.
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
			a.Set(ctx, "k", "hello", 100*time.Second)
			time.Sleep(2300 * time.Millisecond)
			a.Do(ctx, "OBJECT", "IDLETIME", "k")
			a.TTL(ctx, "k")
			a.Do(ctx, "OBJECT", "IDLETIME", "k")
			return nil
		},
	},
}

// RecordClients records into a fixture in dir, through the real proxy in
// front of build, what clients does against the proxy's address.
func RecordClients(dir, build string, clients func(addr string) error) (*fixtures.Fixture, error) {
	return RecordClientsAged(dir, build, 0, clients)
}

// RecordClientsAged is RecordClients with the build started age before
// the recording: a server that ran before the incident was recorded.
func RecordClientsAged(dir, build string, age time.Duration, clients func(addr string) error) (*fixtures.Fixture, error) {
	srv, err := redis.Integration{}.Start(context.Background(), kavach.Launch{Path: build})
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	time.Sleep(age)
	path := filepath.Join(dir, "session.kavach")
	h := fixtures.Header{Protocol: redis.Protocol, Upstream: srv.Addr(), Start: time.Now()}
	w, err := fixtures.Create(path, h)
	if err != nil {
		return nil, err
	}
	p, err := record.Start(record.Options{Codec: redis.Integration{}, Upstream: srv.Addr(), Fixture: w}, h.Start)
	if err != nil {
		w.Close(fixtures.End{})
		return nil, err
	}
	cerr := clients(p.Addr().String())
	// The clients are gone: their closes are recorded as theirs once the
	// proxy has read them.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	p.Idle(ctx)
	cancel()
	p.Close()
	if err := w.Close(fixtures.End{}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, cerr
	}
	return fixtures.Load(path)
}

// redisCLI pipes commands, one a line, into a stock redis-cli connected to
// addr: one connection, each command sent once the last was answered.
func redisCLI(addr string, commands ...string) (string, error) {
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("redis-cli", "-h", host, "-p", port)
	cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), errors.Join(fmt.Errorf("redis-cli: %w", err), errors.New(string(out)))
	}
	return string(out), nil
}

// connect opens n go-redis clients to addr, each connected (a PING) in
// turn, so that the recording numbers their connections in that order;
// done closes them.
func connect(addr string, n int) (clients []*goredis.Client, done func()) {
	for range n {
		c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 1, Protocol: 2, ReadTimeout: 10 * time.Second})
		c.Ping(context.Background())
		clients = append(clients, c)
	}
	return clients, func() {
		for _, c := range clients {
			c.Close()
		}
	}
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
