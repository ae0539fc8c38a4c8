package proxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/probelet/probelet/cri/server"
)

// listenFDsStart is the first file descriptor systemd passes (SD_LISTEN_FDS_START).
const listenFDsStart = 3

// Listen returns the listener for endpoint (unix:///path). When systemd
// passed a socket bound to that path (socket activation: LISTEN_PID is
// this process, LISTEN_FDS counts the descriptors from 3), it is used and
// release leaves it alone: systemd holds it across probelet restarts, so
// the kubelet's connections wait in its backlog instead of being refused.
// Otherwise the socket is created (see cri/server.ListenUnixSocket) and
// release removes it. activated says which.
//
// These few lines replace a dependency: the protocol is a documented
// environment contract (sd_listen_fds(3)), and a library would bring its
// D-Bus and journal code along.
func Listen(endpoint string) (l net.Listener, release func(), activated bool, err error) {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok || !strings.HasPrefix(path, "/") {
		return nil, nil, false, fmt.Errorf("--cri-proxy-listen %q is not unix:///absolute/path", endpoint)
	}
	switch l, err := activatedListener(path); {
	case err != nil:
		return nil, nil, false, err
	case l != nil:
		return l, func() { _ = l.Close() }, true, nil
	}
	ul, release, err := server.ListenUnixSocket(path)
	if err != nil {
		return nil, nil, false, err
	}
	// release removes the file only if it is still ours.
	ul.SetUnlinkOnClose(false)
	return ul, release, false, nil
}

// activatedListener returns the passed socket bound to path, nil when none
// was passed for it. The descriptors are claimed once: the variables are
// unset so a child does not take them for its own.
func activatedListener(path string) (net.Listener, error) {
	if os.Getenv("LISTEN_PID") != strconv.Itoa(os.Getpid()) {
		return nil, nil
	}
	n, err := strconv.Atoi(os.Getenv("LISTEN_FDS"))
	if err != nil || n < 1 {
		return nil, nil
	}
	for fd := listenFDsStart; fd < listenFDsStart+n; fd++ {
		sa, err := syscall.Getsockname(fd)
		if err != nil {
			continue
		}
		if ua, ok := sa.(*syscall.SockaddrUnix); !ok || ua.Name != path {
			continue
		}
		syscall.CloseOnExec(fd)
		f := os.NewFile(uintptr(fd), "systemd:"+path)
		l, err := net.FileListener(f)
		_ = f.Close() // FileListener made its own copy
		if err != nil {
			return nil, fmt.Errorf("socket passed for %s: %w", path, err)
		}
		for _, v := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
			_ = os.Unsetenv(v)
		}
		return l, nil
	}
	return nil, errors.New("systemd passed sockets (LISTEN_FDS), none bound to " + path)
}
