package proxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"github.com/coreos/go-systemd/v22/activation"

	endpointpkg "github.com/probelet/probelet/internal/endpoint"
	"github.com/probelet/probelet/internal/unixsocket"
)

// Listen returns the listener for endpoint (unix:///path). When systemd
// passed a socket bound to that path (socket activation: LISTEN_PID is
// this process, LISTEN_FDS counts the descriptors from 3), it is used and
// release leaves it alone: systemd holds it across probelet restarts, so
// the kubelet's connections wait in its backlog instead of being refused.
// Otherwise the socket is created (internal/unixsocket, root:root) and
// release removes it. activated says which.
//
// The protocol (sd_listen_fds(3)) is read by go-systemd's activation
// package, which imports only the standard library.
func Listen(endpoint string) (l net.Listener, release func(), activated bool, err error) {
	path, err := endpointpkg.UnixPath(endpoint)
	if err != nil {
		return nil, nil, false, fmt.Errorf("listen endpoint %w", err)
	}
	switch l, err := activatedListener(path); {
	case err != nil:
		return nil, nil, false, err
	case l != nil:
		return l, func() { _ = l.Close() }, true, nil
	}
	ul, release, _, err := unixsocket.Listen(path, 0)
	if err != nil {
		return nil, nil, false, err
	}
	return ul, release, false, nil
}

// activatedListener returns the passed socket bound to path, nil when
// none was passed. The descriptors are claimed once (go-systemd unsets the
// variables so a child does not take them for its own); those bound
// elsewhere are closed, as nothing here would ever serve them.
func activatedListener(path string) (net.Listener, error) {
	files := activation.Files(true)
	if len(files) == 0 {
		return nil, nil
	}
	var l net.Listener
	var err error
	for _, f := range files {
		if l == nil && err == nil && boundTo(f, path) {
			l, err = net.FileListener(f)
		}
		_ = f.Close() // FileListener made its own copy
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("socket passed for %s: %w", path, err)
	case l == nil:
		return nil, errors.New("systemd passed sockets (LISTEN_FDS), none bound to " + path)
	}
	return l, nil
}

// boundTo reports whether f is a unix socket bound to path.
func boundTo(f *os.File, path string) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var sa syscall.Sockaddr
	if cerr := rc.Control(func(fd uintptr) { sa, err = syscall.Getsockname(int(fd)) }); cerr != nil || err != nil {
		return false
	}
	ua, ok := sa.(*syscall.SockaddrUnix)
	return ok && ua.Name == path
}
