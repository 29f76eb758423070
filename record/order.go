package record

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/kavach-dev/kavach"
)

// arrivals reads the requests of every client connection in one
// goroutine, in the order they reached the proxy, and records and
// forwards each read before the next: requests reach the service in the
// order their clients sent them, whatever their connection, as they would
// without the proxy.
//
// It matters to a client that writes on two connections without waiting
// for a reply in between: Redis's own suite writes EXEC on one connection
// and then LPUSH on another ("BRPOPLPUSH does not affect WATCH while
// still blocked"), and the LPUSH must not run first. A reader per
// connection cannot promise that: two readers woken together take the
// lock in either order (the suite's test failed in 12 of 30 runs through
// the recorder with a lock held from read to forward). One epoll instance
// over the client connections, edge-triggered, can: its ready list is in
// the order each connection's first new bytes arrived, and the loop takes
// them in that order. Bytes that arrive on a connection while the loop
// reads it are read with it (a connection is read until the kernel has
// nothing more, a turn at a time), so two clients writing at the very
// same moment keep the order of their first bytes only.
type arrivals struct {
	p  *Proxy
	ep *os.File // the epoll instance, waited on through Go's poller
	fd int      // its descriptor, for epoll_ctl (ep keeps it open)

	mu    sync.Mutex
	conns map[uint64]*arrival
}

// arrival is one client connection followed by the arrivals loop.
type arrival struct {
	c    *proxyConn
	raw  syscall.RawConn
	k    *copier
	done chan copyEnd // receives why the connection's requests ended, once

	mu    sync.Mutex // held while the loop reads and forwards it
	ended bool       // guarded by mu
}

// turnReads is how many reads of one connection the loop makes before it
// lets the next ready connection have a turn.
const turnReads = 16

func newArrivals(p *Proxy) (*arrivals, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("record: epoll: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("record: epoll: %w", err)
	}
	// A non-blocking descriptor given to os.NewFile is waited on through
	// the runtime's poller: the loop parks, no thread is held in
	// epoll_wait, and closing the file wakes it.
	return &arrivals{p: p, ep: os.NewFile(uintptr(fd), "epoll"), fd: fd, conns: map[uint64]*arrival{}}, nil
}

// close stops the loop; the connections are closed and stopped by the proxy.
func (a *arrivals) close() { a.ep.Close() }

// follow reads c's client connection from the loop, forwarding its
// requests to dst, until its client ends, dst fails or stop is called;
// it reports why, as copy does.
func (a *arrivals) follow(c *proxyConn, dst io.Writer) copyEnd {
	sc, ok := c.client.(syscall.Conn)
	if !ok {
		return a.p.copy(c, kavach.Request, dst, c.client)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return a.p.copy(c, kavach.Request, dst, c.client)
	}
	r := &arrival{c: c, raw: raw, k: a.p.newCopier(c, kavach.Request, dst), done: make(chan copyEnd, 1)}
	a.mu.Lock()
	a.conns[c.id] = r
	a.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.id), Pad: int32(c.id >> 32)}
	var cerr error
	err = raw.Control(func(fd uintptr) {
		cerr = unix.EpollCtl(a.fd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err == nil {
		err = cerr
	}
	if err == nil {
		return <-r.done
	}
	r.mu.Lock()
	if r.ended || errors.Is(err, net.ErrClosed) {
		// Closed by the proxy before it could be followed.
		if !r.ended {
			a.finish(r, r.k.end(err))
		}
		r.mu.Unlock()
		return <-r.done
	}
	a.finish(r, 0)
	<-r.done
	r.mu.Unlock()
	a.p.log.Warn("requests read by their own reader, not in arrival order", "conn", c.id, "err", err)
	return a.p.copy(c, kavach.Request, dst, c.client)
}

// stop ends the following of connection id (closed by the proxy): what
// it was reading is recorded and forwarded first.
func (a *arrivals) stop(id uint64) {
	a.mu.Lock()
	r := a.conns[id]
	a.mu.Unlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ended {
		a.finish(r, r.k.end(net.ErrClosed))
	}
}

// finish ends r with end. r.mu must be held.
func (a *arrivals) finish(r *arrival, end copyEnd) {
	r.ended = true
	r.raw.Control(func(fd uintptr) {
		unix.EpollCtl(a.fd, unix.EPOLL_CTL_DEL, int(fd), nil)
	})
	a.mu.Lock()
	delete(a.conns, r.c.id)
	a.mu.Unlock()
	r.done <- end
}

// run is the loop: it waits for connections with new bytes and reads
// them in the order the epoll instance lists them, until close.
func (a *arrivals) run() {
	defer a.p.wg.Done()
	raw, err := a.ep.SyscallConn()
	if err != nil {
		a.p.log.Error("arrivals", "err", err)
		return
	}
	events := make([]unix.EpollEvent, 256)
	buf := make([]byte, readSize)
	var ready, again []*arrival
	for {
		var n int
		var werr error
		err := raw.Read(func(fd uintptr) bool {
			for {
				n, werr = unix.EpollWait(int(fd), events, 0)
				if werr != unix.EINTR {
					return werr != nil || n > 0
				}
			}
		})
		if err != nil || werr != nil {
			if !errors.Is(err, os.ErrClosed) {
				a.p.log.Error("arrivals: epoll_wait", "err", errors.Join(err, werr))
			}
			return
		}
		ready = ready[:0]
		a.mu.Lock()
		for _, ev := range events[:n] {
			if r := a.conns[uint64(uint32(ev.Fd))|uint64(uint32(ev.Pad))<<32]; r != nil {
				ready = append(ready, r)
			}
		}
		a.mu.Unlock()
		// A connection with more to read after its turn goes round again
		// after the others: the kernel says nothing new of it (edge).
		for len(ready) > 0 {
			again = again[:0]
			for _, r := range ready {
				if a.read(r, buf) {
					again = append(again, r)
				}
			}
			ready, again = again, ready
		}
	}
}

// read takes up to turnReads reads of r's client, records and forwards
// each; it reports whether r may have more to read.
func (a *arrivals) read(r *arrival, buf []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range turnReads {
		if r.ended {
			return false
		}
		var n int
		var rerr error
		if err := r.raw.Read(func(fd uintptr) bool {
			for {
				n, rerr = unix.Read(int(fd), buf)
				if rerr != unix.EINTR {
					return true
				}
			}
		}); err != nil {
			rerr = err
		}
		if n > 0 {
			if end, ok := r.k.take(buf[:n]); !ok {
				a.finish(r, end)
				return false
			}
		}
		switch {
		case rerr == unix.EAGAIN:
			return false
		case rerr != nil:
			a.finish(r, r.k.end(rerr))
			return false
		case n <= 0:
			a.finish(r, r.k.end(io.EOF))
			return false
		}
	}
	return true
}
