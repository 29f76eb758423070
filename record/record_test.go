package record_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kavach-dev/kavach"
	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/launch"
	"github.com/kavach-dev/kavach/record"
)

// redisServer is the Debian package's redis-server, which `make test` installs.
func redisServer(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (make test installs it): %v", err)
	}
	return path
}

// startRedis starts a real redis-server through the integration's launcher.
func startRedis(t testing.TB, args ...string) kavach.Process {
	t.Helper()
	p, err := redis.Integration{}.Start(context.Background(), kavach.Launch{Path: redisServer(t), Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

// recording is a proxy writing to a fixture, in front of upstream.
type recording struct {
	t     testing.TB
	path  string
	w     *fixtures.Writer
	proxy *record.Proxy
}

func startRecording(t testing.TB, upstream string, mod func(*record.Options)) *recording {
	t.Helper()
	path := filepath.Join(t.TempDir(), "incident.kavach")
	h := fixtures.Header{Protocol: redis.Protocol, Upstream: upstream, Start: time.Now()}
	w, err := fixtures.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	opts := record.Options{Codec: redis.Integration{}, Redactor: redis.Integration{}.Abilities().Redaction, Upstream: upstream, Fixture: w}
	if mod != nil {
		mod(&opts)
	}
	p, err := record.Start(opts, h.Start)
	if err != nil {
		t.Fatal(err)
	}
	r := &recording{t: t, path: path, w: w, proxy: p}
	t.Cleanup(func() { r.proxy.Close(); r.w.Close(fixtures.End{}) })
	return r
}

func (r *recording) addr() string { return r.proxy.Addr().String() }

// idle waits until the proxy has recorded the close of every connection.
func (r *recording) idle() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !r.proxy.Idle(ctx) {
		s := r.proxy.Stats()
		r.t.Fatalf("proxy recorded %d closes of %d connections after 10 s", s.Closed, s.Conns)
	}
}

// finish stops the proxy, closes the fixture and loads it.
func (r *recording) finish() *fixtures.Fixture {
	r.t.Helper()
	if err := r.proxy.Close(); err != nil {
		r.t.Fatal(err)
	}
	if err := r.w.Close(fixtures.End{Reason: "test"}); err != nil {
		r.t.Fatal(err)
	}
	if err := r.proxy.Err(); err != nil {
		r.t.Fatal(err)
	}
	fx, err := fixtures.Load(r.path)
	if err != nil {
		r.t.Fatal(err)
	}
	if fx.Warning != nil {
		r.t.Fatalf("clean recording loaded with a warning: %v", fx.Warning)
	}
	return fx
}

// commands renders every step as "COMMAND args -> reply | reply".
func commands(fx *fixtures.Fixture) []string {
	c := redis.Integration{}
	var out []string
	for _, s := range kavach.Steps(fx.Events, c) {
		line := c.DescribeRequest(s.Request.Data, 0) + " ->"
		for _, r := range s.Responses {
			line += " " + c.DescribeResponse(r.Data, 0)
		}
		out = append(out, line)
	}
	return out
}

func containsInOrder(t *testing.T, got, want []string) {
	t.Helper()
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("recorded steps lack %q (in order); got:\n%s", want[i], strings.Join(got, "\n"))
	}
}

func TestRedisCLIThroughProxy(t *testing.T) {
	srv := startRedis(t)
	rec := startRecording(t, srv.Addr(), nil)
	_, port, _ := net.SplitHostPort(rec.addr())
	cli := func(args ...string) string {
		out, err := exec.Command("redis-cli", append([]string{"-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := cli("SET", "greeting", "hello world"); got != "OK" {
		t.Fatalf("SET through proxy = %q", got)
	}
	if got := cli("GET", "greeting"); got != "hello world" {
		t.Fatalf("GET through proxy = %q", got)
	}
	cli("RPUSH", "l", "a", "b", "c")
	if got := cli("LRANGE", "l", "0", "-1"); got != "a\nb\nc" {
		t.Fatalf("LRANGE = %q", got)
	}
	cli("INCR", "greeting") // an error reply
	// redis-cli has exited, but the proxy may not have read its EOF yet:
	// stopping the proxy first would record the close as the proxy's.
	rec.idle()
	fx := rec.finish()
	containsInOrder(t, commands(fx), []string{
		`SET "greeting" "hello world" -> OK`,
		`GET "greeting" -> "hello world"`,
		`RPUSH "l" "a" "b" "c" -> (integer) 3`,
		`LRANGE "l" "0" "-1" -> 1) "a" 2) "b" 3) "c"`,
		`INCR "greeting" -> (error) ERR value is not an integer or out of range`,
	})
	// Every redis-cli run is its own connection, opened and closed by the client.
	var opens, closes int
	for _, ev := range fx.Events {
		switch ev.Dir {
		case kavach.Open:
			opens++
		case kavach.Close:
			closes++
			if string(ev.Data) != "client" {
				t.Errorf("conn %d closed by %q, want client", ev.Conn, ev.Data)
			}
		}
	}
	if opens != 5 || closes != 5 {
		t.Errorf("%d opens and %d closes, want 5 each", opens, closes)
	}
	if fx.Failure != nil {
		t.Errorf("failure recorded in a healthy session: %+v", fx.Failure)
	}
}

func TestGoRedisRESP3ThroughProxy(t *testing.T) {
	srv := startRedis(t)
	rec := startRecording(t, srv.Addr(), nil)
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: rec.addr(), Protocol: 3, PoolSize: 1})
	defer c.Close()
	if err := c.HSet(ctx, "user:1", "name", "ada", "lang", "go").Err(); err != nil {
		t.Fatal(err)
	}
	m, err := c.HGetAll(ctx, "user:1").Result()
	if err != nil || m["name"] != "ada" || m["lang"] != "go" {
		t.Fatalf("HGETALL = %v, %v", m, err)
	}
	// Pipelined: both requests may arrive in one read; each is its own step.
	pipe := c.Pipeline()
	pipe.Set(ctx, "n", 41, 0)
	incr := pipe.Incr(ctx, "n")
	if _, err := pipe.Exec(ctx); err != nil || incr.Val() != 42 {
		t.Fatalf("pipeline: %v, incr = %d", err, incr.Val())
	}
	f, err := c.Do(ctx, "DEBUG", "SLEEP", "0").Result()
	if err == nil {
		t.Logf("DEBUG SLEEP = %v", f)
	}
	c.Close()
	fx := rec.finish()
	got := commands(fx)
	containsInOrder(t, got, []string{
		`HSET "user:1" "name" "ada" "lang" "go" -> (integer) 2`,
		`SET "n" "41" -> OK`,
		`INCR "n" -> (integer) 42`,
	})
	// RESP3: HGETALL answers with a map.
	var sawMap bool
	for _, ev := range fx.Events {
		if ev.Dir == kavach.Response && len(ev.Data) > 0 && ev.Data[0] == '%' {
			sawMap = true
		}
	}
	if !sawMap || !strings.HasPrefix(got[0], "HELLO \"3\"") {
		t.Errorf("no RESP3 handshake and map reply recorded:\n%s", strings.Join(got, "\n"))
	}
}

func TestBlockingAndPubSubRecordedWhereTheyArrive(t *testing.T) {
	srv := startRedis(t)
	rec := startRecording(t, srv.Addr(), nil)
	ctx := context.Background()
	a := goredis.NewClient(&goredis.Options{Addr: rec.addr(), Protocol: 2, PoolSize: 1})
	b := goredis.NewClient(&goredis.Options{Addr: rec.addr(), Protocol: 2, PoolSize: 1})
	defer a.Close()
	defer b.Close()
	b.Ping(ctx) // open b's connection before the blocking pop

	popped := make(chan []string)
	go func() {
		v, _ := a.BLPop(ctx, 5*time.Second, "jobs").Result()
		popped <- v
	}()
	time.Sleep(200 * time.Millisecond) // let BLPOP block
	b.LPush(ctx, "jobs", "j1")
	if v := <-popped; len(v) != 2 || v[1] != "j1" {
		t.Fatalf("BLPOP = %v", v)
	}

	sub := b.Subscribe(ctx, "news")
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	a.Publish(ctx, "news", "hello")
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "hello" {
		t.Fatalf("message = %v, %v", msg, err)
	}
	sub.Close()
	a.Close()
	b.Close()
	fx := rec.finish()

	steps := kavach.Steps(fx.Events, redis.Integration{})
	var blpop, lpush, subscribe *kavach.Step
	for i := range steps {
		switch d := (redis.Integration{}).DescribeRequest(steps[i].Request.Data, 0); {
		case strings.HasPrefix(d, "BLPOP"):
			blpop = &steps[i]
		case strings.HasPrefix(d, "LPUSH"):
			lpush = &steps[i]
		case strings.HasPrefix(d, "SUBSCRIBE"):
			subscribe = &steps[i]
		}
	}
	if blpop == nil || lpush == nil || subscribe == nil {
		t.Fatalf("steps missing:\n%s", strings.Join(commands(fx), "\n"))
	}
	if blpop.N > lpush.N || len(blpop.Responses) != 1 {
		t.Fatalf("BLPOP step %d (%d replies), LPUSH step %d", blpop.N, len(blpop.Responses), lpush.N)
	}
	// The BLPOP reply arrived after the LPUSH request: the fixture says so.
	if blpop.Responses[0].Seq < lpush.Request.Seq {
		t.Errorf("BLPOP reply (event %d) recorded before the LPUSH that caused it (event %d)", blpop.Responses[0].Seq, lpush.Request.Seq)
	}
	// The published message is a push attached to the SUBSCRIBE step.
	var pushes []string
	for _, r := range subscribe.Responses {
		pushes = append(pushes, (redis.Integration{}).DescribeResponse(r.Data, 0))
	}
	if len(pushes) != 2 || !strings.Contains(pushes[1], `"message" 2) "news" 3) "hello"`) {
		t.Errorf("SUBSCRIBE replies = %q, want its confirmation and the message", pushes)
	}
}

func TestNothingLostUnderLoad(t *testing.T) {
	srv := startRedis(t)
	rec := startRecording(t, srv.Addr(), nil)
	direct := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), Protocol: 2, Dialer: func(ctx context.Context, _, addr string) (net.Conn, error) { return launch.Dial(ctx, addr) }})
	defer direct.Close()
	ctx := context.Background()
	if err := direct.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(rec.addr())
	out, err := exec.Command("redis-benchmark", "-p", port, "-c", "50", "-n", "4000", "-P", "4",
		"-t", "set,get,incr,lpush,lpop", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	fx := rec.finish()
	info, err := direct.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	executed := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || name == "cmdstat_config|resetstat" { // sent directly, not through the proxy
			continue
		}
		n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		executed += n
	}
	var requests int
	for _, ev := range fx.Events {
		if ev.Dir == kavach.Request {
			requests++
			if ev.Flags&kavach.ParseError != 0 {
				t.Fatalf("benchmark traffic recorded as unparsable: %q", ev.Data)
			}
		}
	}
	if requests != executed || executed < 5*4000 {
		t.Fatalf("recorded %d requests, the server executed %d commands (want equal, at least 20000)", requests, executed)
	}
}

func TestCrashIsTheFailure(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "crash.kavach")
	build := &kavach.Launch{Path: redisServer(t), Args: []string{"--enable-debug-command", "yes"}}
	s := record.Session{
		Out: out, Launch: build,
		Proxy: record.Options{Codec: redis.Integration{}},
	}
	addr := make(chan string, 1)
	done := make(chan error, 1)
	var res record.Result
	go func() {
		var err error
		res, err = s.Run(context.Background(), redis.Protocol, func(a string) { addr <- a })
		done <- err
	}()
	c := goredis.NewClient(&goredis.Options{Addr: <-addr, Protocol: 2, PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	c.Set(ctx, "k", "v", 0)
	c.Get(ctx, "k")
	if err := c.Do(ctx, "DEBUG", "SEGFAULT").Err(); err == nil {
		t.Fatal("DEBUG SEGFAULT answered")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("recording did not end when the build died")
	}
	fx, err := fixtures.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	steps := kavach.Steps(fx.Events, redis.Integration{})
	last := steps[len(steps)-1]
	if d := (redis.Integration{}).DescribeRequest(last.Request.Data, 0); d != `DEBUG "SEGFAULT"` {
		t.Fatalf("last step is %s", d)
	}
	f := fx.Failure
	if f == nil || f.Step != last.N || f.Signature != "crash" || !strings.Contains(f.Evidence, "SIGSEGV") {
		t.Fatalf("failure = %+v, want a crash at step %d with SIGSEGV in its evidence", f, last.N)
	}
	if res.Failure == nil || res.Failure.Step != f.Step {
		t.Errorf("result failure %+v", res.Failure)
	}
	h := fx.Header
	if h.Build == nil || h.Build.Path != build.Path || len(h.Build.SHA256) != 64 || !strings.HasPrefix(h.Build.Version, "redis ") {
		t.Errorf("build identity = %+v", h.Build)
	}
	if h.Launch == nil || h.Launch.Args[1] != "yes" || fx.End == nil || !strings.Contains(fx.End.Reason, "SIGSEGV") {
		t.Errorf("launch %+v, end %+v", h.Launch, fx.End)
	}
}

func TestFailOnErrorClass(t *testing.T) {
	srv := startRedis(t)
	o, _ := kavach.ParseOracle("error:WRONGTYPE")
	rec := startRecording(t, srv.Addr(), func(opts *record.Options) { opts.FailOn = &o })
	c := goredis.NewClient(&goredis.Options{Addr: rec.addr(), Protocol: 2, PoolSize: 1})
	defer c.Close()
	ctx := context.Background()
	c.Set(ctx, "s", "x", 0)
	c.Incr(ctx, "s")           // ERR: not the class asked for
	c.LPush(ctx, "s", "y")     // WRONGTYPE: the failure
	c.HSet(ctx, "s", "f", "v") // WRONGTYPE again: not a second failure
	c.Close()
	fx := rec.finish()
	got := commands(fx)
	f := fx.Failure
	if f == nil || f.Signature != "error:WRONGTYPE" || !strings.HasPrefix(got[f.Step-1], `LPUSH "s" "y"`) {
		t.Fatalf("failure = %+v; steps:\n%s", f, strings.Join(got, "\n"))
	}
}

func TestGarbageFromAClientIsForwardedAndRecorded(t *testing.T) {
	srv := startRedis(t)
	rec := startRecording(t, srv.Addr(), nil)
	bad, err := net.Dial("tcp", rec.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	garbage := "*2\r\n$3\r\nGET\r\n$x\r\n\x00\xff junk"
	bad.Write([]byte(garbage))
	// Redis answers a protocol error and closes: the bytes reached it.
	reply, _ := bufio.NewReader(bad).ReadString('\n')
	if !strings.HasPrefix(reply, "-ERR Protocol error") {
		t.Fatalf("server answered %q, want a protocol error (the bytes were not forwarded unchanged?)", reply)
	}
	// Meanwhile another client is served normally.
	good := goredis.NewClient(&goredis.Options{Addr: rec.addr(), Protocol: 2, PoolSize: 1})
	defer good.Close()
	if v, err := good.Echo(context.Background(), "still here").Result(); err != nil || v != "still here" {
		t.Fatalf("ECHO after garbage = %q, %v", v, err)
	}
	good.Close()
	bad.Close()
	fx := rec.finish()
	var raw []byte
	for _, ev := range fx.Events {
		if ev.Dir == kavach.Request && ev.Flags&kavach.ParseError != 0 {
			raw = append(raw, ev.Data...)
		}
	}
	if string(raw) != garbage {
		t.Errorf("raw bytes recorded %q, want the garbage %q", raw, garbage)
	}
	if fx.Failure != nil {
		t.Errorf("a client's garbage recorded as the failure: %+v", fx.Failure)
	}
}

func TestSecretsRedacted(t *testing.T) {
	srv := startRedis(t, "--requirepass", "hunter2")
	rec := startRecording(t, srv.Addr(), nil)
	c := goredis.NewClient(&goredis.Options{Addr: rec.addr(), Protocol: 2, Password: "hunter2", PoolSize: 1})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET with password through proxy: %v", err)
	}
	c.ConfigSet(ctx, "requirepass", "hunter3")
	c.Close()
	fx := rec.finish()
	for _, ev := range fx.Events {
		if strings.Contains(string(ev.Data), "hunter") {
			t.Errorf("secret written to the fixture: %q", ev.Data)
		}
	}
	var notes []string
	for _, r := range fx.Redactions {
		notes = append(notes, r.Note)
	}
	// go-redis authenticates with HELLO ... AUTH where the server has HELLO.
	if n := fmt.Sprint(notes); n != "[HELLO AUTH password CONFIG SET requirepass]" && n != "[AUTH password CONFIG SET requirepass]" {
		t.Errorf("redactions = %q", notes)
	}
}

func TestStoppingMidTrafficIsNoCrash(t *testing.T) {
	// Ctrl-C while requests are in flight: the proxy cuts the connections
	// itself, which is no failure of the service.
	srv := startRedis(t)
	rec := startRecording(t, srv.Addr(), nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := goredis.NewClient(&goredis.Options{Addr: rec.addr(), Protocol: 2, PoolSize: 1, MaxRetries: -1})
			defer c.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				pipe := c.Pipeline()
				for j := 0; j < 16; j++ {
					pipe.Incr(context.Background(), "n")
				}
				pipe.Exec(context.Background())
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	fx := rec.finish()
	close(stop)
	wg.Wait()
	if fx.Failure != nil {
		t.Fatalf("stopping the recording recorded a failure: %+v", fx.Failure)
	}
	var proxyCloses int
	for _, ev := range fx.Events {
		if ev.Dir == kavach.Close && string(ev.Data) == "server" {
			t.Errorf("conn %d recorded as closed by the server", ev.Conn)
		}
		if ev.Dir == kavach.Close && string(ev.Data) == "proxy" {
			proxyCloses++
		}
	}
	if proxyCloses == 0 {
		t.Error("no connection recorded as closed by the proxy")
	}
}

// TestUnreachableUpstreamIsRecorded: a client the proxy could not connect
// to the service is in the fixture (its connection opened, and closed by
// the upstream), not dropped unseen.
func TestUnreachableUpstreamIsRecorded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rec := startRecording(t, addr, nil)
	c, err := net.Dial("tcp", rec.addr())
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	io.ReadAll(c) // the proxy closes it
	c.Close()
	fx := rec.finish()
	var dirs []string
	for _, ev := range fx.Events {
		dirs = append(dirs, fmt.Sprintf("%d %s %s", ev.Conn, ev.Dir, ev.Data))
	}
	if len(dirs) != 2 || dirs[0] != "1 open " || dirs[1] != "1 close upstream" {
		t.Errorf("events %q, want the connection opened and closed by the upstream", dirs)
	}
}

// Clients that declare a large value and stall cost the recorder what
// they sent, not what they declared, and nothing once they are gone.
func TestStalledLargeDeclarations(t *testing.T) {
	srv := startRedis(t)
	rec := startRecording(t, srv.Addr(), nil)
	const clients, declared = 20, 67_000_000
	heap := func() (inUse, held uint64) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc, m.HeapSys - m.HeapReleased
	}
	base, baseHeld := heap()
	head := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", declared)
	body := strings.Repeat("x", 64<<10)
	var conns []net.Conn
	for range clients {
		c, err := net.Dial("tcp", rec.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
		// Two reads at least: room is made when more comes to a message
		// already begun.
		c.Write([]byte(head + body))
	}
	for _, c := range conns {
		c.Write([]byte(body))
	}
	// Everything sent has gone through the proxy once the server has read it.
	direct, err := launch.DialTimeout(srv.Addr(), 5*time.Second) // the server is in a network namespace of its own
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	br := bufio.NewReader(direct)
	want := clients * (len(head) + 2*len(body))
	deadline := time.Now().Add(30 * time.Second)
	for {
		direct.Write([]byte("*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n"))
		n := infoField(t, br, "total_net_input_bytes")
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server read %d of the %d bytes sent", n, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if now, _ := heap(); now > base+50<<20 {
		t.Errorf("%d stalled clients declaring %d bytes each: the recorder's heap grew by %d MB", clients, declared, (now-base)>>20)
	}
	for _, c := range conns {
		c.Close()
	}
	rec.idle()
	if _, held := heap(); held > baseHeld+50<<20 {
		t.Errorf("after the clients left, the recorder holds %d MB more than before", (held-baseHeld)>>20)
	}
}

// infoField reads an INFO reply from br and returns the integer field name.
func infoField(t *testing.T, br *bufio.Reader, name string) int {
	t.Helper()
	head, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("INFO answered %q, %v", head, err)
	}
	size, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	body := make([]byte, size+2)
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatalf("INFO has no %s", name)
	return 0
}
