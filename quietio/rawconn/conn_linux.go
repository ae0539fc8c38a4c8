//go:build linux

// Package rawconn is a net.Conn whose reads and writes are raw,
// non-blocking system calls that wait in the Go netpoller.
//
// Why: a read or write through net's connection is a system call through
// the runtime's path (syscall.Syscall), and each one wakes the runtime's
// monitor thread (sysmon) of an otherwise idle process, which then naps
// every 20 µs for as long as the process is busy: for an agent that is
// idle between probes, most of the wake-ups a probe costs
// (hack/bench/engine). The connection answers as net's does: the same
// errors with net's texts ("read tcp LOCAL->REMOTE: …", net.ErrClosed,
// os.ErrDeadlineExceeded) and deadlines.
package rawconn

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Closer takes over a connection's File at Close: it reports whether it
// did (and closes it itself, later); if not, Close closes the File. It
// runs with the descriptor held open, as fd.
type Closer func(f *os.File, fd int) (took bool)

// New makes a connection of f, a connected non-blocking stream socket; it
// owns f from then on. closer may be nil.
func New(f *os.File, network string, local, remote net.Addr, closer Closer) (net.Conn, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &conn{f: f, rc: rc, network: network, local: local, remote: remote, closer: closer}, nil
}

type conn struct {
	f             *os.File
	rc            syscall.RawConn
	network       string
	local, remote net.Addr
	closer        Closer
	// closed is set by Close: a File the closer took stays open a while,
	// and the connection must answer as a closed one meanwhile.
	closed atomic.Bool
}

func (c *conn) Read(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, c.opError("read", net.ErrClosed)
	}
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno unix.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		r, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		n, errno = int(r), e
		return e != unix.EAGAIN
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *conn) Write(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, c.opError("write", net.ErrClosed)
	}
	written := 0
	for written < len(p) {
		var n int
		var errno unix.Errno
		err := c.rc.Write(func(fd uintptr) bool {
			rest := p[written:]
			r, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
			n, errno = int(r), e
			return e != unix.EAGAIN
		})
		switch {
		case err != nil:
			return written, c.opError("write", err)
		case errno != 0:
			return written, c.opError("write", os.NewSyscallError("write", errno))
		}
		written += n
	}
	return written, nil
}

// Close closes the connection to its users at once — a read or write
// waiting on it returns, and every later one fails, with net.ErrClosed —
// and its File now or, when the closer took it, when the closer does.
func (c *conn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return c.opError("close", net.ErrClosed)
	}
	var took bool
	if c.closer != nil {
		_ = c.rc.Control(func(fd uintptr) { took = c.closer(c.f, int(fd)) })
	}
	if took {
		_ = c.f.SetDeadline(time.Unix(1, 0)) // a past deadline arms no timer
		return nil
	}
	if err := c.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return c.opError("close", err)
	}
	return nil
}

// SyscallConn is the socket's, for a caller's own non-waiting system
// calls (a peek).
func (c *conn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

func (c *conn) LocalAddr() net.Addr                { return c.local }
func (c *conn) RemoteAddr() net.Addr               { return c.remote }
func (c *conn) SetDeadline(t time.Time) error      { return c.deadline(c.f.SetDeadline, t) }
func (c *conn) SetReadDeadline(t time.Time) error  { return c.deadline(c.f.SetReadDeadline, t) }
func (c *conn) SetWriteDeadline(t time.Time) error { return c.deadline(c.f.SetWriteDeadline, t) }

// deadline sets one of the File's deadlines unless the connection is
// closed.
func (c *conn) deadline(set func(time.Time) error, t time.Time) error {
	if !c.closed.Load() && set(t) == nil {
		return nil
	}
	// The File refuses a deadline only once closed; net names the local
	// address alone here.
	return &net.OpError{Op: "set", Net: c.network, Addr: c.local, Err: net.ErrClosed}
}

// opError is net's error for op on the connection; os.File's deadline and
// closed errors become net's.
func (c *conn) opError(op string, err error) error {
	// Only Close closes the File, and it marks the connection closed
	// first: the File's own closed error (internal/poll's, which no
	// exported error matches) is never seen without closed set.
	switch {
	case c.closed.Load() || errors.Is(err, os.ErrClosed):
		err = net.ErrClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = os.ErrDeadlineExceeded
	}
	return &net.OpError{Op: op, Net: c.network, Source: c.local, Addr: c.remote, Err: err}
}

// DialUnix connects to the stream socket at path with raw system calls.
// A connect that would wait (a full backlog) or an abstract address goes
// to net's dialer.
func DialUnix(ctx context.Context, path string) (net.Conn, error) {
	remote := &net.UnixAddr{Name: path, Net: "unix"}
	sa := unix.RawSockaddrUnix{Family: unix.AF_UNIX}
	if path == "" || path[0] == '@' || len(path) >= len(sa.Path) {
		return new(net.Dialer).DialContext(ctx, "unix", path)
	}
	if err := ctx.Err(); err != nil {
		return nil, &net.OpError{Op: "dial", Net: "unix", Addr: remote, Err: err}
	}
	copy((*[len(sa.Path)]byte)(unsafe.Pointer(&sa.Path))[:], path)
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return nil, &net.OpError{Op: "dial", Net: "unix", Addr: remote, Err: os.NewSyscallError("socket", e)}
	}
	n := unsafe.Offsetof(sa.Path) + uintptr(len(path)) + 1
	_, _, e = unix.RawSyscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa)), n)
	switch e {
	case 0:
	case unix.EAGAIN, unix.EINPROGRESS, unix.EINTR:
		_, _, _ = unix.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
		return new(net.Dialer).DialContext(ctx, "unix", path)
	default:
		_, _, _ = unix.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
		return nil, &net.OpError{Op: "dial", Net: "unix", Addr: remote, Err: os.NewSyscallError("connect", e)}
	}
	// A non-blocking descriptor makes a pollable File (registered with a
	// runtime-internal fcntl and epoll_ctl: no system call through the
	// runtime's path).
	f := os.NewFile(fd, "unix:"+path)
	// An unbound client socket's address, as net names it.
	c, err := New(f, "unix", &net.UnixAddr{Name: "@", Net: "unix"}, remote, nil)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return c, nil
}
