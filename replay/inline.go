package replay

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A connection open alone is read by the runner itself, inline, not by a
// reader goroutine: handing each reply from a reader to the runner was a
// wake-up of another goroutine, and often of another thread, per step,
// the largest part of what a replay of one client's round trips cost
// over the round trips themselves (bench/README.md, "Inline reads").
// The replies then wait in the kernel until the runner looks (poll,
// wait), which it does wherever a reader's frame would have been taken;
// every check that nothing is unread asks the kernel's queue
// (inQueue), as it did for a reader's connection. The runner waits for a
// reply in ppoll(2), on its own thread: Go's netpoller would wake another
// thread to take the reply, and every deadline set for a wait woke the
// thread sleeping in the netpoller to re-arm its timer. A second connection
// opened meanwhile hands the first to a reader goroutine (unline), with
// the bytes of a reply not yet whole.
//
// A read that finds nothing is a system call all the same, and poll runs
// several times a step: so poll reads the connection only while it has
// not been read to the end (conn.drained). Nothing is decided on what
// poll did not read: every wait asks the kernel first (a reply already
// there ends it at once), and so does every look that the build has
// sent everything (done, idle). A reply is so taken in at the wait for
// it, or at the next look: as with a reader goroutine, which frames it
// whenever the build's bytes happen to come (docs/replay.md, "Who reads
// the build's replies").

// rawConn is nc's descriptor access, or nil when it has none.
func rawConn(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// alone reports whether every connection but c is done with: never
// connected, closed by the replay, or ended by the build.
func (r *runner) alone(c *conn) bool {
	for _, o := range r.order {
		if o != c && o.nc != nil && !o.closed && !o.ended {
			return false
		}
	}
	return true
}

// makeInline has the runner read c itself, if its descriptor is there
// to read.
func (r *runner) makeInline(c *conn) bool {
	rc := rawConn(c.nc)
	if rc == nil {
		return false
	}
	fd := -1
	if rc.Control(func(d uintptr) { fd = int(d) }) != nil || fd < 0 {
		return false
	}
	// The descriptor stays c's until the runner closes c (hangUp,
	// closeAll): the runner alone reads it, between.
	c.inline, c.fd, r.inline = true, fd, c
	return true
}

// unline hands the inline connection to a reader goroutine.
func (r *runner) unline() {
	c := r.inline
	r.inline = nil
	c.inline = false
	f := c.fr
	c.fr = framer{}
	go r.read(c, f)
}

// readNow takes in, without waiting, what the build has sent on the
// inline connection, and reports whether a reply was framed or the
// connection ended.
func (r *runner) readNow() bool {
	c := r.inline
	if c == nil {
		return false
	}
	c.drained = false
	_, framed := r.readFd(c)
	return framed
}

// readFd reads c's descriptor until it would block, and reports whether
// it read anything (bytes or the end) and whether that framed a reply or
// ended the connection.
func (r *runner) readFd(c *conn) (read, framed bool) {
	for {
		if len(c.buf) == 0 {
			c.buf = make([]byte, 64<<10)
		}
		n, err := unix.Read(c.fd, c.buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			c.drained = true
			if r.frame(c, &c.fr) {
				framed = true
			}
			return read, framed
		case err != nil:
			r.frame(c, &c.fr)
			r.endInline(c, os.NewSyscallError("read", err))
			return true, true
		case n == 0:
			r.frame(c, &c.fr)
			r.endInline(c, errEOF)
			return true, true
		}
		read = true
		c.fr.data = append(c.fr.data, c.buf[:n]...)
		if n == len(c.buf) && !c.fr.raw {
			// A full buffer: more is waiting. Frame once it is all in,
			// as the reader goroutine does.
			continue
		}
		if r.frame(c, &c.fr) {
			framed = true
		}
		if n < len(c.buf) {
			// A short read took all that had come: asking again now
			// would find nothing.
			c.drained = true
			return read, framed
		}
	}
}

// errEOF is the end of an inline connection the build closed, as a
// reader goroutine would see it.
var errEOF = errors.New("EOF")

// endInline ends the inline connection as its reader goroutine would
// have: the end is pushed, and poll takes it.
func (r *runner) endInline(c *conn, err error) {
	if r.inline == c {
		r.inline = nil
	}
	r.push(c, nil, err)
}

// waitInline waits up to d for a reply on the inline connection (or its
// end), reading it in, and reports whether one came. A reader goroutine
// of a connection closed before it was opened may still end: that wakes
// the wait too, once it is over.
func (r *runner) waitInline(d time.Duration) bool {
	c := r.inline
	select {
	case <-r.wake:
		return true
	default:
	}
	deadline := time.Now().Add(d)
	for r.inline == c {
		if !c.drained {
			if _, framed := r.readFd(c); framed {
				return true
			}
			continue
		}
		left := time.Until(deadline)
		if left <= 0 {
			return len(r.wake) > 0
		}
		if read, framed := r.spin(c); framed {
			return true
		} else if read {
			continue
		}
		if readable(c.fd, left) {
			c.drained = false
		}
	}
	return true
}

// spin looks for a reply for up to spinFor before the wait sleeps,
// yielding the processor between looks; it reports whether it read
// anything, and whether that framed a reply or ended the connection.
//
// A reply to a round trip comes a few tens of microseconds after its
// request. A thread that sleeps for it is woken by the kernel when it
// comes, and on a virtual machine a processor that went idle takes about
// as long again to run it: spinning the first 25 µs made a replay of
// one client's distinct-millisecond traffic 15 % faster, and 30 %
// beside stress-ng (bench/README.md, "Inline reads"). Between looks the
// thread yields, so that a build or another replay waiting for the
// processor gets it: a spin takes only what nobody else wants.
func (r *runner) spin(c *conn) (read, framed bool) {
	began := time.Now()
	for time.Since(began) < spinFor {
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		if read, framed = r.readFd(c); read {
			return read, framed
		}
	}
	return false, false
}

// spinFor is how long a wait for a reply spins before it sleeps.
const spinFor = 25 * time.Microsecond

// readable waits up to d for fd to have something to read (or its end),
// and reports whether it has. ppoll asks the kernel's queue as it is, so
// a reply that came before the call returns at once.
func readable(fd int, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	end := time.Now().Add(d)
	for {
		ts := unix.NsecToTimespec(int64(max(time.Until(end), 0)))
		n, err := unix.Ppoll(fds, &ts, nil)
		if err == unix.EINTR {
			continue // a signal: wait out what is left
		}
		return err != nil || n > 0
	}
}

// pauseInline is waitFine's pause with an inline connection: it waits
// up to d for a reply, in the kernel, and then takes in what came.
func (r *runner) pauseInline(d time.Duration) bool {
	if r.readNow() {
		return true
	}
	if !readable(r.inline.fd, d) {
		select {
		case <-r.wake:
			return true
		default:
		}
		return false
	}
	return r.readNow()
}

// hangUpInline takes in what the build sent before the recorded client
// closed the connection (a reader goroutine would have had it), then
// ends it as a reader goroutine's read on a closed connection would.
func (r *runner) hangUpInline(c *conn) {
	if r.inline != c {
		return
	}
	r.readNow()
	if r.inline == c {
		r.endInline(c, net.ErrClosed)
	}
}

// readers reports whether a reader goroutine may still read, so that a
// look at unread bytes must give it the processor first.
func (r *runner) readers() bool {
	for _, c := range r.order {
		if c.nc != nil && !c.inline && !c.ended {
			return true
		}
	}
	return false
}
