package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/probelet/probelet/internal/endpoint"
)

// dialProbeTimeout bounds the dial that tells a live socket from a stale one.
const dialProbeTimeout = time.Second

// SocketPath returns the filesystem path of the listen endpoint
// (endpoint.UnixPath's rule).
func SocketPath(ep string) (string, error) {
	path, err := endpoint.UnixPath(ep)
	if err != nil {
		return "", fmt.Errorf("listen address %w", err)
	}
	return path, nil
}

// listenUnix creates the socket at path: the directory is created 0750 if
// missing, a live socket is never taken over, a stale one is replaced, and
// the new socket is chmod 0660 and chowned to root:gid.
// It reports whether a stale socket was replaced.
func listenUnix(path string, gid int) (*net.UnixListener, bool, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, false, fmt.Errorf("create socket directory: %w", err)
	}
	stale, err := removeStale(path)
	if err != nil {
		return nil, false, err
	}
	l, err := bindUnix(path, gid)
	return l, stale, err
}

// bindUnix binds the socket and sets its mode and owner.
func bindUnix(path string, gid int) (*net.UnixListener, error) {
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// We remove the file ourselves in Stop, after checking it is still ours.
	l.SetUnlinkOnClose(false)
	// The socket is briefly umask-wide between bind and chmod; the 0750
	// directory keeps others out during that window.
	if err := os.Chmod(path, 0o660); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("chmod socket %s: %w", path, err)
	}
	if err := os.Lchown(path, 0, gid); err != nil && !errors.Is(err, syscall.EPERM) {
		_ = l.Close()
		return nil, fmt.Errorf("chown socket %s: %w", path, err)
	}
	return l, nil
}

// removeStale removes a socket file nobody listens on and says whether it
// did. It refuses to touch a live socket or anything that is not a socket.
func removeStale(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return false, fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	}
	conn, err := net.DialTimeout("unix", path, dialProbeTimeout)
	if err == nil {
		_ = conn.Close()
		return false, fmt.Errorf("%s is in use by another process (is probelet already running?)", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return false, fmt.Errorf("probe existing socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return true, nil
}

// removeIfSame removes path only if it is still the socket we created
// (same inode), so a successor's socket is never deleted.
func removeIfSame(path string, created os.FileInfo) {
	fi, err := os.Lstat(path)
	if err != nil || !os.SameFile(fi, created) {
		return
	}
	_ = os.Remove(path)
}
