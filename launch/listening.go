package launch

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Listening reports whether a process of the tree rooted at pid holds a
// listening TCP socket on the port. It sends nothing: a probe that
// connected without it could reach another process that took the port
// between FreePort and the build's bind.
//
// Each socket the tree holds is asked directly: duplicated into Kavach
// (pidfd_getfd, allowed on a descendant), then whether it listens
// (SO_ACCEPTCONN) and on which port (getsockname), and closed: a few
// system calls per socket. Where the kernel refuses that (before Linux
// 5.6, or a sandbox that forbids it), the sockets are matched against
// the kernel's tables instead, as before (listeningInTables).
func Listening(pid, port int) bool {
	if pidfdRefused.Load() {
		return listeningInTables(pid, port)
	}
	for _, p := range ProcessTree(pid) {
		fds := sockets(p)
		if len(fds) == 0 {
			continue
		}
		pidfd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(p), 0, 0)
		if errno != 0 {
			if errno == syscall.ENOSYS || errno == syscall.EPERM {
				pidfdRefused.Store(true)
				return listeningInTables(pid, port)
			}
			continue // gone
		}
		listens, err := anyListens(int(pidfd), fds, port)
		syscall.Close(int(pidfd))
		if err != nil {
			pidfdRefused.Store(true)
			return listeningInTables(pid, port)
		}
		if listens {
			return true
		}
	}
	return false
}

// The system calls Listening uses, by number (the syscall package has
// neither).
const (
	sysPidfdOpen  = 434
	sysPidfdGetfd = 438
)

// pidfdRefused is set once the kernel refused pidfd_open or pidfd_getfd
// for a reason that would hold for every build: Listening then reads the
// tables.
var pidfdRefused atomic.Bool

// socket is one of a process's descriptors that is a socket, with the
// socket's inode (as /proc/PID/fd links and the kernel's tables name it).
type socket struct {
	fd    int
	inode string
}

// sockets are the descriptors of process pid that are sockets.
func sockets(pid int) []socket {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var out []socket
	for _, name := range names {
		l, err := os.Readlink(dir + name)
		if err != nil || !strings.HasPrefix(l, "socket:[") || !strings.HasSuffix(l, "]") {
			continue
		}
		if fd, err := strconv.Atoi(name); err == nil {
			out = append(out, socket{fd, l[len("socket:[") : len(l)-1]})
		}
	}
	return out
}

// anyListens reports whether one of fds, the sockets of the process pidfd
// refers to, listens on TCP port. An error says the kernel refused to
// duplicate them at all (not a socket closed meanwhile).
func anyListens(pidfd int, fds []socket, port int) (bool, error) {
	for _, s := range fds {
		dup, _, errno := syscall.Syscall(sysPidfdGetfd, uintptr(pidfd), uintptr(s.fd), 0)
		switch {
		case errno == syscall.EBADF:
			continue // closed since it was listed
		case errno != 0:
			return false, errno
		}
		ok := listensOn(int(dup), port)
		syscall.Close(int(dup))
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// listensOn reports whether socket fd listens, on TCP port.
func listensOn(fd, port int) bool {
	if acc, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err != nil || acc == 0 {
		return false
	}
	if typ, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE); err != nil || typ != syscall.SOCK_STREAM {
		return false
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return false
	}
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return a.Port == port
	case *syscall.SockaddrInet6:
		return a.Port == port
	}
	return false
}

// listeningInTables is Listening where the sockets cannot be asked: the
// sockets listening on the port (/proc/PID/net/tcp and tcp6, the tables
// of the build's network namespace) matched against the tree's open
// files. Reading a table walks the kernel's whole connection hash, every
// namespace's: milliseconds on a machine with many connections.
func listeningInTables(pid, port int) bool {
	// The tree's sockets first: a handful of links to read, and none at
	// all until the build has bound, so that polling a build that is not
	// up yet costs almost nothing. Only then the tables, which hold every
	// socket of the machine (thousands on a busy one).
	socks := map[string]bool{}
	for _, p := range ProcessTree(pid) {
		for _, s := range sockets(p) {
			socks[s.inode] = true
		}
	}
	if len(socks) == 0 {
		return false
	}
	local := []byte(fmt.Sprintf(":%04X ", port)) // the local address's port, as the tables write it
	// The build's own tables: those of its network namespace.
	for _, table := range []string{"/proc/" + strconv.Itoa(pid) + "/net/tcp", "/proc/" + strconv.Itoa(pid) + "/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for len(b) > 0 {
			line := b
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				line, b = b[:i], b[i+1:]
			} else {
				b = nil
			}
			if !bytes.Contains(line, local) {
				continue
			}
			// sl local_address rem_address st ... uid timeout inode
			f := strings.Fields(string(line))
			if len(f) < 10 || f[3] != "0A" || !strings.HasSuffix(f[1], string(local[:len(local)-1])) {
				continue
			}
			if socks[f[9]] {
				return true
			}
		}
	}
	return false
}
