//go:build linux

package grpcwire

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readable reports whether a read of nc would not wait: bytes came, or the
// peer closed. It peeks with a raw, non-blocking system call, which does
// not wake the runtime's monitor thread as syscall.Syscall would.
func readable(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true // the read will say what is wrong
	}
	var b [1]byte
	var errno unix.Errno
	if err := rc.Read(func(fd uintptr) bool {
		_, _, errno = unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		return true
	}); err != nil {
		return true
	}
	return errno != unix.EAGAIN
}
