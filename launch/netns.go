package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	linux "golang.org/x/sys/unix"
)

// Each build runs in a network namespace of its own, with only its
// loopback interface: whatever a fixture asks of it (CONFIG SET bind
// 0.0.0.0, protected-mode no, REPLICAOF, MIGRATE to a listener of the
// fixture's choosing), it listens on and reaches nothing outside. Kavach
// connects into it with Dial, which creates the socket inside the build's
// namespace (a socket keeps the namespace it was created in).
//
// The namespace is made on a thread of Kavach's own (unshare), its
// loopback brought up there, and the build forked from that thread, so the
// build finds 127.0.0.1 up from its first instruction; the thread then goes
// back to Kavach's namespace. This needs CAP_SYS_ADMIN (root, in practice):
// an unprivileged Go program cannot enter a user namespace (the kernel
// refuses it to a process with more than one thread), and without one it
// cannot make or enter a network namespace. Where the kernel refuses,
// builds run in Kavach's namespace (Isolation says which), with the
// integration's Spawn.Shared arguments, and the replay withholds the
// fixture's requests that would open them to the network
// (kavach.Abilities.NewContainment; docs/security.md, "Contained").

// Isolation names how builds are kept off the network: "netns" (each in a
// network namespace of its own) or "none" (the kernel refused one: builds
// share Kavach's network).
func Isolation() string {
	if isolationErr() != nil {
		return "none"
	}
	return "netns"
}

// Network says, for a person, how builds are kept off the network:
// "isolated (...)" or "shared: REASON".
func Network() string {
	if err := isolationErr(); err != nil {
		return "shared with this machine: " + err.Error()
	}
	return "isolated (a network namespace of its own, loopback only)"
}

// IsolationReason is why builds are not isolated ("" when they are).
func IsolationReason() string {
	if err := isolationErr(); err != nil {
		return err.Error()
	}
	return ""
}

// isolationErr is nil when builds are to run in network namespaces of
// their own: KAVACH_NO_NETNS is not set (it is read at each start), and
// the kernel allows one.
func isolationErr() error {
	if TrustNetwork() {
		return errors.New("KAVACH_NO_NETNS=trust is set")
	}
	if os.Getenv("KAVACH_NO_NETNS") != "" {
		return errors.New("KAVACH_NO_NETNS is set")
	}
	return netnsErr()
}

// TrustNetwork reports whether KAVACH_NO_NETNS=trust asks for builds in
// Kavach's network with nothing of a fixture's withheld (no containment,
// no Spawn.Shared arguments): for a fixture one made oneself, as
// --trust-fixture-launch is for its launch (docs/security.md).
func TrustNetwork() bool { return os.Getenv("KAVACH_NO_NETNS") == "trust" }

// netnsErr is nil when a network namespace can be made here: tried once.
var netnsErr = sync.OnceValue(func() error {
	var err error
	inNewNetns(func(int) { err = nil }, &err)
	return err
})

// inNewNetns runs fn on a locked thread that has just entered a new
// network namespace with its loopback up; fn gets an fd of that namespace
// (open until the caller closes it, a dup is kept by whoever needs it).
// The thread goes back to the original namespace afterwards; if it cannot,
// it is not unlocked, and the runtime ends it with its goroutine. On
// failure *errp is set and fn is not called.
func inNewNetns(fn func(nsfd int), errp *error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		orig, err := linux.Open("/proc/thread-self/ns/net", linux.O_RDONLY|linux.O_CLOEXEC, 0)
		if err != nil {
			*errp = fmt.Errorf("network namespace: open own: %w", err)
			runtime.UnlockOSThread()
			return
		}
		defer linux.Close(orig)
		if err := linux.Unshare(linux.CLONE_NEWNET); err != nil {
			*errp = fmt.Errorf("network namespace: unshare: %w", err)
			runtime.UnlockOSThread()
			return
		}
		// From here the thread is in the new namespace: it is unlocked only
		// once it is back.
		ns, err := linux.Open("/proc/thread-self/ns/net", linux.O_RDONLY|linux.O_CLOEXEC, 0)
		if err == nil {
			err = loopbackUp()
			if err != nil {
				linux.Close(ns)
			}
		}
		if err != nil {
			*errp = fmt.Errorf("network namespace: %w", err)
		} else {
			*errp = nil
			fn(ns)
			linux.Close(ns)
		}
		if linux.Setns(orig, linux.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
	}()
	<-done
}

// loopbackUp brings up lo in the calling thread's network namespace.
func loopbackUp() error {
	s, err := linux.Socket(linux.AF_INET, linux.SOCK_DGRAM|linux.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer linux.Close(s)
	ifr, err := linux.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := linux.IoctlIfreq(s, linux.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: get flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | linux.IFF_UP)
	if err := linux.IoctlIfreq(s, linux.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: up: %w", err)
	}
	return nil
}

// namespaces maps the address of each running build that has a network
// namespace of its own to an fd of that namespace.
var namespaces = struct {
	sync.Mutex
	fds map[string]int
}{fds: map[string]int{}}

// register records addr's namespace (an fd the registry now owns). It
// returns false, and closes nothing, if addr is already taken.
func register(addr string, fd int) bool {
	namespaces.Lock()
	defer namespaces.Unlock()
	if _, ok := namespaces.fds[addr]; ok {
		return false
	}
	namespaces.fds[addr] = fd
	return true
}

// unregister forgets addr's namespace and closes its fd.
func unregister(addr string) {
	namespaces.Lock()
	defer namespaces.Unlock()
	if fd, ok := namespaces.fds[addr]; ok {
		linux.Close(fd)
		delete(namespaces.fds, addr)
	}
}

// Dial connects to addr over TCP: into the build's network namespace when
// addr is a running build's, else as net.Dialer does. Every connection
// Kavach makes to a build goes through it.
func Dial(ctx context.Context, addr string) (net.Conn, error) {
	namespaces.Lock()
	fd, ok := namespaces.fds[addr]
	if ok {
		// Held for the dial: Stop's unregister cannot close it meanwhile.
		var err error
		if fd, err = linux.Dup(fd); err != nil {
			namespaces.Unlock()
			return nil, fmt.Errorf("dial %s: build's network namespace: %w", addr, err)
		}
	}
	namespaces.Unlock()
	var d net.Dialer
	if !ok {
		return d.DialContext(ctx, "tcp", addr)
	}
	defer linux.Close(fd)
	type result struct {
		c   net.Conn
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := linux.Open("/proc/thread-self/ns/net", linux.O_RDONLY|linux.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{nil, fmt.Errorf("dial %s: own network namespace: %w", addr, err)}
			return
		}
		defer linux.Close(orig)
		if err := linux.Setns(fd, linux.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			res <- result{nil, fmt.Errorf("dial %s: enter the build's network namespace: %w", addr, err)}
			return
		}
		// The socket is made here, on this thread, in the build's
		// namespace; the goroutine stays on it while connecting.
		c, err := d.DialContext(ctx, "tcp", addr)
		if linux.Setns(orig, linux.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else the thread ends with this goroutine
		res <- result{c, err}
	}()
	r := <-res
	return r.c, r.err
}

// DialTimeout is Dial bounded by timeout.
func DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return Dial(ctx, addr)
}

// reservePort binds a TCP socket to a free loopback port of Kavach's own
// network, without listening, and returns it: held for a build's life,
// the port is no other process's there, so the build's address (the same
// port, in the build's namespace) names that build alone for Dial. A
// connection to it in Kavach's network is refused.
func reservePort() (fd, port int, err error) {
	fd, err = linux.Socket(linux.AF_INET, linux.SOCK_STREAM|linux.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("reserve a loopback port: %w", err)
	}
	if err = linux.Bind(fd, &linux.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err == nil {
		var sa linux.Sockaddr
		if sa, err = linux.Getsockname(fd); err == nil {
			return fd, sa.(*linux.SockaddrInet4).Port, nil
		}
	}
	linux.Close(fd)
	return -1, 0, fmt.Errorf("reserve a loopback port: %w", err)
}
