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
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	raw.Control(func(fd uintptr) {
		var v int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&v))); e == 0 {
			n = int(v)
		}
	})
	return n
}
