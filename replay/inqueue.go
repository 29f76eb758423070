package replay

import (
	"net"
	"syscall"
	"unsafe"
)

// inQueue is how many bytes wait unread in a TCP connection's receive
// queue (the FIONREAD ioctl): bytes the build sent that the reader has not
// taken yet. Zero when it cannot tell.
func inQueue(nc net.Conn) int {
	n, _ := ioctlInt(nc, syscall.TIOCINQ)
	return n
}

// ioctlInt asks a connection's socket an ioctl that reads one int.
func ioctlInt(nc net.Conn, req uintptr) (n int, ok bool) {
	raw := rawConn(nc)
	if raw == nil {
		return 0, false
	}
	raw.Control(func(fd uintptr) {
		var v int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(unsafe.Pointer(&v))); e == 0 {
			n, ok = int(v), true
		}
	})
	return n, ok
}
