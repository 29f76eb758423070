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
// (inQueue), as it did for a reader's connection. A second connection
// opened meanwhile hands the first to a reader goroutine (unline), with
// the bytes of a reply not yet whole.
//
// A read that finds nothing is a system call all the same, and poll runs
// several times a step: so poll reads only what may have come since the
// connection was last read to the end (conn.drained), which a request
// sent or a clock move ends. Nothing is decided on what poll did not
// read: every wait reads (a reply that comes wakes it, however early),
// and every look that the build has sent everything (done, idle) asks
// the kernel. A reply that came meanwhile is taken in at the next wait
// instead: as with a reader goroutine, which frames it whenever the
// build's bytes happen to come.

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

// unline hands the inline connection to a reader goroutine.
func (r *runner) unline() {
	c := r.inline
	r.inline = nil
	c.inline = false
	f := c.fr
	c.fr = framer{}
	// The reader waits as long as it takes: no deadline of a wait of
	// the runner's may end its read.
	c.nc.SetReadDeadline(time.Time{})
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
	var framed bool
	if err := c.rc.Control(func(fd uintptr) { _, framed = r.readFd(c, fd) }); err != nil {
		r.endInline(c, err)
		return true
	}
	return framed
}

// readFd reads c's descriptor until it would block, and reports whether
// it read anything (bytes or the end) and whether that framed a reply or
// ended the connection.
func (r *runner) readFd(c *conn, fd uintptr) (read, framed bool) {
	for {
		if len(c.buf) == 0 {
			c.buf = make([]byte, 64<<10)
		}
		n, err := unix.Read(int(fd), c.buf)
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
		c.nc.SetReadDeadline(deadline)
		var framed bool
		// The read is tried before the netpoller is waited on, even when
		// the connection was read to the end a moment ago: the wait
		// forgets what the netpoller saw before it (prepareRead resets
		// it), and a reply that came in between would be waited for
		// until the build sent more.
		err := c.rc.Read(func(fd uintptr) bool {
			var read bool
			read, framed = r.readFd(c, fd)
			return read
		})
		if framed {
			return true
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return len(r.wake) > 0
		}
		if err != nil {
			r.endInline(c, err)
			return true
		}
	}
	return true
}

// pauseInline is waitFine's pause with an inline connection: the
// runner's thread sleeps for d, and then takes in what came meanwhile.
func (r *runner) pauseInline(d time.Duration) bool {
	if r.readNow() {
		return true
	}
	pause(d)
	select {
	case <-r.wake:
		return true
	default:
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

// sentOn notes that c's build has been given something it may answer: a
// request, or (c nil) a clock move, which every connection may hear of.
func (r *runner) sentOn(c *conn) {
	if in := r.inline; in != nil && (c == nil || c == in) {
		in.drained = false
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
