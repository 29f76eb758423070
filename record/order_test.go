package record_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kavach-dev/kavach/fixtures"
	"github.com/kavach-dev/kavach/integrations/redis"
	"github.com/kavach-dev/kavach/record"
)

// A client that writes on one connection and then, without waiting for a
// reply, on another has them run in that order through the recorder, as
// without it. Redis's own suite does this ("BRPOPLPUSH does not affect
// WATCH while still blocked"): EXEC on a connection watching dst, then
// LPUSH src on another while a BRPOPLPUSH src dst is blocked. Run first,
// the EXEC finds dst untouched and answers; run after the LPUSH (whose
// push onto dst unblocks the BRPOPLPUSH), the EXEC is aborted (nil).
//
// With a reader per connection and a lock held from read to forward (the
// recorder before its arrivals loop, order.go) the LPUSH overtook the
// EXEC in every run of this test, idle (5 of 5); the suite's test failed
// in 12 of 30 runs. The proxy runs in a process of its own, as `kavach
// record` does (proxyProcess): in the test's own process, a reader per
// connection passed it.
func TestRequestsForwardedInArrivalOrder(t *testing.T) {
	fixture := filepath.Join(t.TempDir(), "order.kavach")
	addr, stop := proxyProcess(t, runningRedis(t), fixture)
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	main, mainR := dial()
	watching, watchingR := dial()
	call := func(c net.Conn, r *bufio.Reader, args ...string) string {
		t.Helper()
		send(t, c, args...)
		return reply(t, r)
	}
	const rounds = 60
	for i := range rounds {
		src, dst := fmt.Sprintf("src%d{t}", i), fmt.Sprintf("dst%d{t}", i)
		call(main, mainR, "SET", "somekey{t}", "somevalue")
		blocked, blockedR := dial()
		send(t, blocked, "BRPOPLPUSH", src, dst, "0")
		waitBlocked(t, main, mainR)
		call(watching, watchingR, "WATCH", dst)
		call(watching, watchingR, "MULTI")
		call(watching, watchingR, "GET", "somekey{t}")
		send(t, watching, "EXEC")
		send(t, main, "LPUSH", src, "element")
		lpushed := reply(t, mainR)
		if got := reply(t, watchingR); got != "[somevalue]" {
			t.Fatalf("round %d: EXEC answered %s (LPUSH %s): the LPUSH written after it on another connection ran first", i, got, lpushed)
		}
		if got := reply(t, blockedR); got != "element" {
			t.Fatalf("round %d: BRPOPLPUSH answered %s", i, got)
		}
		blocked.Close()
	}
	main.Close()
	watching.Close()
	stop()

	// The fixture has them in the order the service ran them.
	fx, err := fixtures.Load(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range commands(fx) {
		if w, _, _ := strings.Cut(c, " "); w == "EXEC" || w == "LPUSH" {
			order = append(order, w)
		}
	}
	if want := strings.Repeat("EXEC LPUSH ", rounds); strings.Join(order, " ")+" " != want {
		t.Errorf("recorded EXEC and LPUSH in the order %v", order)
	}
}

// runningRedis starts redis-server on a free loopback port of this
// network (not a build's namespace: the proxy runs in another process)
// and returns its address once it answers.
func runningRedis(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(redisServer(t), "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			send(t, c, "PING")
			ok := reply(t, bufio.NewReader(c)) == "PONG"
			c.Close()
			if ok {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer in 10 s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMain runs the recording proxy of proxyProcess when asked to.
func TestMain(m *testing.M) {
	if upstream := os.Getenv("KAVACH_TEST_PROXY_UPSTREAM"); upstream != "" {
		os.Exit(runProxyProcess(upstream, os.Getenv("KAVACH_TEST_PROXY_FIXTURE")))
	}
	os.Exit(m.Run())
}

// proxyProcess starts a recording proxy in front of upstream, writing
// fixture, in a process of its own (this test binary again), as `kavach
// record` runs: a proxy in the test's own process shares the test's
// scheduler, and a client there does not catch the proxy's readers waking
// together. stop ends it and waits for the fixture to be written.
func proxyProcess(t *testing.T, upstream, fixture string) (addr string, stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "KAVACH_TEST_PROXY_UPSTREAM="+upstream, "KAVACH_TEST_PROXY_FIXTURE="+fixture)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			in.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("proxy process: %v", err)
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Error("proxy process did not end 30 s after its input closed")
			}
		})
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("proxy process gave no address: %v", err)
	}
	return strings.TrimSpace(line), stop
}

// runProxyProcess is the proxy of proxyProcess: it prints its address and
// records until its input ends.
func runProxyProcess(upstream, path string) int {
	h := fixtures.Header{Protocol: redis.Protocol, Upstream: upstream, Start: time.Now()}
	w, err := fixtures.Create(path, h)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := record.Start(record.Options{Codec: redis.Integration{}, Upstream: upstream, Fixture: w}, h.Start)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(p.Addr())
	io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	p.Idle(ctx)
	cancel()
	err = errors.Join(p.Close(), w.Close(fixtures.End{Reason: "test"}), p.Err())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// waitBlocked waits until the service has a blocked client.
func waitBlocked(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		send(t, c, "INFO", "clients")
		if infoField(t, r, "blocked_clients") > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the BRPOPLPUSH never blocked")
		}
		time.Sleep(time.Millisecond)
	}
}

// send writes a command as a RESP array.
func send(t *testing.T, c net.Conn, args ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
}

// reply reads one RESP2 reply: a simple string, error or integer as its
// text, a bulk string as its value ("nil" for a null), an array as its
// elements in brackets.
func reply(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		t.Fatal("empty reply line")
	}
	switch line[0] {
	case '$', '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			t.Fatalf("reply %q", line)
		}
		if n < 0 {
			return "nil"
		}
		if line[0] == '$' {
			b := make([]byte, n+2)
			if _, err := io.ReadFull(r, b); err != nil {
				t.Fatal(err)
			}
			return string(b[:n])
		}
		var el []string
		for range n {
			el = append(el, reply(t, r))
		}
		return "[" + strings.Join(el, " ") + "]"
	}
	return line[1:]
}
