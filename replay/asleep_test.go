package replay

import (
	"io"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/kavach-dev/kavach"
)

// TestAsleep: asleep says what the kernel says of every thread of the
// tree: a shell blocked on a read is asleep; once it has started a child
// that spins, it is not.
func TestAsleep(t *testing.T) {
	cmd, in := startShell(t, "read x; (while :; do :; done) & read y")
	w := watch{pid: cmd.Process.Pid}
	waitFor(t, "blocked on its read", func() bool { a, _ := w.asleep(); return a })
	if asleep, ok := w.asleep(); !asleep || !ok {
		t.Fatalf("asleep of a shell blocked on a read: %v, ok %v", asleep, ok)
	}
	io.WriteString(in, "go\n")
	waitFor(t, "started its child", func() bool { return len(w.tree()) > 1 })
	for range 3 {
		if asleep, ok := w.asleep(); asleep || !ok {
			t.Fatalf("asleep of a tree with a spinning child: %v, ok %v", asleep, ok)
		}
	}
	if asleep, ok := (watch{pid: 1 << 30}).asleep(); asleep || ok {
		t.Fatalf("asleep of no process: %v, ok %v", asleep, ok)
	}
}

// TestTurnAfterAsleep: a settled move waits for one whole turn of the
// build's loop after it. A build seen blocked after the move has turned
// once it has woken and slept again: here, a shell that reads a line per
// turn. It is still waited for until that turn, and one turn is enough
// (two sleeps would be needed if the build could not be seen asleep).
func TestTurnAfterAsleep(t *testing.T) {
	cmd, in := startShell(t, "while read x; do :; done")
	// A port with a listener and no connection: nothing is on its way.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w := watch{pid: cmd.Process.Pid, port: port(l.Addr().String())}
	waitFor(t, "blocked on its read", func() bool { a, _ := w.asleep(); return a })
	r := &runner{opts: Options{StepTimeout: time.Minute}, proc: running{}, watch: w}
	done := make(chan bool, 1)
	go func() { done <- r.turn() }()
	select {
	case <-done:
		t.Fatal("turn returned before the build turned")
	case <-time.After(300 * time.Millisecond):
	}
	io.WriteString(in, "one turn\n")
	if !<-done {
		t.Fatal("turn waited out its bound after one turn of a build seen asleep")
	}
}

// TestInFlight: what is on its way to a service, as its network
// namespace shows it: a connection the kernel accepted and the service
// did not, bytes sent to it and not read; and then nothing.
func TestInFlight(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w := watch{pid: os.Getpid(), port: port(l.Addr().String())}
	look := func(want bool, what string) {
		t.Helper()
		// The kernel's queues may take a moment to show what was sent.
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			busy, ok := w.inFlight()
			if !ok {
				t.Fatalf("%s: cannot read the table", what)
			}
			if busy == want {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("%s: in flight %v, want %v", what, busy, want)
			}
		}
	}
	look(false, "a listener alone")
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	look(true, "a connection not accepted")
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	look(false, "accepted")
	io.WriteString(c, "PING\r\n")
	look(true, "a request not read")
	io.ReadFull(s, make([]byte, 6))
	look(false, "read")
	c.Close()
	look(true, "a close not taken in")
	s.Close()
	look(false, "closed on both sides")
	if _, ok := (watch{pid: 1 << 30, port: 1}).inFlight(); ok {
		t.Fatal("inFlight of no process: ok")
	}
}

// FuzzTCPInFlight: any table parses without a panic, and a table whose
// only line is a listener with a connection waiting is busy.
func FuzzTCPInFlight(f *testing.F) {
	const header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	f.Add([]byte(header+"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000001 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n"), 8080)
	f.Add([]byte(header+"   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 2\n"), 8080)
	f.Add([]byte("garbage"), 1)
	if !tcpInFlight([]byte(header+"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000001 00:00000000 00000000     0        0 1\n"), 8080) {
		f.Fatal("a listener with a connection waiting: not in flight")
	}
	f.Fuzz(func(t *testing.T, table []byte, port int) {
		tcpInFlight(table, port)
	})
}

// running is a process that has not exited.
type running struct{ kavach.Process }

func (running) Exited() *kavach.Exit { return nil }

// startShell starts sh -c script with a pipe to its standard input, and
// kills its tree when the test ends.
func startShell(t *testing.T, script string) (*exec.Cmd, io.Writer) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range (watch{pid: cmd.Process.Pid}).tree()[1:] {
			exec.Command("kill", "-9", itoa(pid)).Run()
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, in
}

// waitFor polls cond; the bound is only against a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("never %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
