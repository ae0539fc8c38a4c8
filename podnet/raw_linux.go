//go:build linux

package podnet

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The calls on a probe's path (setns in and out, socket, setsockopt) are
// raw system calls: none blocks, and each through the runtime's
// system-call path would wake its monitor thread in an otherwise idle
// agent, which then naps every 20 µs while the process is busy — most of
// a probe's cost on this path (hack/bench/node), as quietio/rawtcp found
// for the connection itself.

func rawSetns(fd int) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETNS, uintptr(fd), unix.CLONE_NEWNET, 0); e != 0 {
		return e
	}
	return nil
}

func rawSocket(family, sotype, proto int) (int, error) {
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), uintptr(sotype), uintptr(proto))
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// rawLinger sets the kubelet's SO_LINGER {1, 1} on fd.
func rawLinger(fd int) error {
	l := unix.Linger{Onoff: 1, Linger: 1}
	if _, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_LINGER,
		uintptr(unsafe.Pointer(&l)), unsafe.Sizeof(l), 0); e != 0 {
		return e
	}
	return nil
}

func rawClose(fd int) {
	_, _, _ = unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}
