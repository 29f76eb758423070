package launch

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/kavach-dev/kavach"
)

// TestIsolationWhereTheKernelAllowsIt: where the kernel lets this user make
// a network namespace (unshare -n succeeds), builds are isolated; a
// failure to make or set one up is not silently taken for a refusal.
func TestIsolationWhereTheKernelAllowsIt(t *testing.T) {
	if os.Getenv("KAVACH_NO_NETNS") != "" {
		if Isolation() != "none" {
			t.Errorf("KAVACH_NO_NETNS set: isolation %q, want none", Isolation())
		}
		return
	}
	out, err := exec.Command("unshare", "-n", "true").CombinedOutput()
	if errors.Is(err, exec.ErrNotFound) {
		t.Skip("no unshare program to ask the kernel")
	}
	switch {
	case err == nil && Isolation() != "netns":
		t.Errorf("unshare -n works here, but builds are not isolated: %s", IsolationReason())
	case err != nil && Isolation() == "netns":
		t.Errorf("unshare -n fails here (%v: %s), but isolation is %q", err, out, Isolation())
	}
}

// TestDialEntersTheBuildsNamespace: an isolated build's address answers
// through Dial, and nothing answers there in Kavach's own network (its
// port is held, not listened on, there).
func TestDialEntersTheBuildsNamespace(t *testing.T) {
	if Isolation() != "netns" {
		t.Skipf("builds are not isolated here: %s", IsolationReason())
	}
	path := script(t, "exec python3 -m http.server --bind 127.0.0.1 \"$PORT\" >/dev/null 2>&1\n")
	p, err := Spawn{Launch: kavach.Launch{Path: path}, Env: []string{"PORT={port}"}, Ready: tcpReady}.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(context.Background(), p.Addr())
	if err != nil {
		t.Fatalf("Dial %s: %v", p.Addr(), err)
	}
	c.Close()
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		c.Close()
		t.Errorf("%s answers in Kavach's network: the build is not in a namespace of its own", p.Addr())
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s in Kavach's network: %v, want refused", p.Addr(), err)
	}
	// Its port is held in Kavach's network while it runs.
	if l, err := net.Listen("tcp", p.Addr()); err == nil {
		l.Close()
		t.Errorf("%s can be taken in Kavach's network while the build runs", p.Addr())
	}
	p.Stop()
	// Stopped: the address is no build's, and its port is free again.
	if _, err := Dial(context.Background(), p.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial after Stop: %v, want refused in Kavach's network", err)
	}
	l, err := net.Listen("tcp", p.Addr())
	if err != nil {
		t.Fatalf("the build's port is still held after Stop: %v", err)
	}
	l.Close()
}
