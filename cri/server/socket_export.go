package server

import (
	"fmt"
	"net"
	"os"
)

// ListenUnixSocket creates a unix socket at path with the rules of
// probelet's own socket (directory 0750 if missing, a live socket never
// taken over, a stale one replaced, the socket 0660 root:root). release
// closes the listener if still open and removes the file if it is still
// the one made here, never a successor's. The CRI proxy shares it.
func ListenUnixSocket(path string) (l *net.UnixListener, release func(), err error) {
	l, _, err = listenUnix(path, 0)
	if err != nil {
		return nil, nil, err
	}
	created, err := os.Lstat(path)
	if err != nil {
		_ = l.Close()
		return nil, nil, fmt.Errorf("stat new socket: %w", err)
	}
	return l, func() {
		_ = l.Close()
		removeIfSame(path, created)
	}, nil
}
