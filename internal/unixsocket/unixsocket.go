// Package unixsocket makes the unix sockets probelet's processes serve on
// (probelet's own socket, the CRI proxy's): never taking over a live
// socket, replacing a stale one, and removing only their own file.
package unixsocket

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// dialProbeTimeout bounds the dial that tells a live socket from a stale one.
const dialProbeTimeout = time.Second

// Listen creates the socket at path: the directory is created 0750 if
// missing, a live socket is never taken over, a stale one is replaced
// (stale says so), and the new socket is chmod 0660 and chowned to
// root:gid. release closes the listener if still open and removes the
// file if it is still the one made here, never a successor's.
func Listen(path string, gid int) (l *net.UnixListener, release func(), stale bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, nil, false, fmt.Errorf("create socket directory: %w", err)
	}
	if stale, err = removeStale(path); err != nil {
		return nil, nil, false, err
	}
	if l, err = bindUnix(path, gid); err != nil {
		return nil, nil, false, err
	}
	created, err := os.Lstat(path)
	if err != nil {
		_ = l.Close()
		return nil, nil, false, fmt.Errorf("stat new socket: %w", err)
	}
	return l, func() {
		_ = l.Close()
		removeIfSame(path, created)
	}, stale, nil
}

// bindUnix binds the socket and sets its mode and owner.
func bindUnix(path string, gid int) (*net.UnixListener, error) {
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// release removes the file, after checking it is still ours.
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
