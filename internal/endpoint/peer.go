package endpoint

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// PeerPid is the pid of the process at the other end of a unix socket
// connection (SO_PEERCRED), as this process's PID namespace numbers it: 0
// when that process is not in it (nor in a namespace below it).
func PeerPid(c net.Conn) (int32, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, errors.New("endpoint: connection has no socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := rc.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	return cred.Pid, nil
}
