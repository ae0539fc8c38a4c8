//go:build linux

package tcpprobe

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DialRaw is DialContext for a probe's request and reply (HTTP, gRPC): the
// connection's socket, connect, reads, writes and shutdown are raw,
// non-blocking system calls, waiting only in the Go netpoller, and its
// close is the one call through the runtime's system-call path. Every call
// through that path wakes the runtime's monitor thread of an otherwise idle
// process, which then naps every 20 µs for as long as the process is busy:
// with net's connection, most of a probe's wake-ups (hack/bench/engine). An
// address that is not an IP literal and port goes to DialContext.
//
// The connection answers as net's does: the same errors, with net's texts
// ("dial tcp ADDR: connect: …", "read tcp LOCAL->REMOTE: read: …"), and
// deadlines.
func (d *Dialer) DialRaw(ctx context.Context, network, address string) (net.Conn, error) {
	addr, err := netip.ParseAddrPort(address)
	if err != nil || addr.Addr().Zone() != "" || network != "tcp" || d.control == nil || addr.Port() == 0 {
		return d.DialContext(ctx, network, address)
	}
	if err := ctx.Err(); err != nil {
		return nil, dialError(addr, netContextError(err))
	}
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	d.lingering.sweep(time.Now())
	c, err := dialRaw(addr)
	if err != nil {
		return nil, err
	}
	// A non-blocking descriptor makes a pollable File (registered with a
	// runtime-internal fcntl and epoll_ctl: no system call through the
	// runtime's path).
	f := os.NewFile(uintptr(c.fd), "tcp-probe")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	conn := &rawConn{f: f, rc: rc, remote: net.TCPAddrFromAddrPort(addr), lingering: &d.lingering}
	if err := conn.waitConnected(ctx, c); err != nil {
		_ = f.Close()
		return nil, dialError(addr, err)
	}
	conn.local = localAddr(c.fd)
	return conn, nil
}

// waitConnected waits in the netpoller until the connect completed, failed
// or ctx (and its deadline) ended.
func (c *rawConn) waitConnected(ctx context.Context, cn *conn) error {
	ctxErr, err := cn.await(ctx, c.f, c.rc)
	if ctxErr != nil {
		return netContextError(ctxErr)
	}
	return err
}

// netContextError is net's word for a dial's ctx that ended: "i/o
// timeout" for a deadline, "operation was canceled" for a cancel.
func netContextError(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return os.ErrDeadlineExceeded
	case errors.Is(err, context.Canceled):
		return errCanceled{}
	}
	return err
}

// errCanceled is net's error for a cancelled dial.
type errCanceled struct{}

func (errCanceled) Error() string        { return "operation was canceled" }
func (errCanceled) Is(target error) bool { return target == context.Canceled }

func localAddr(fd int) *net.TCPAddr {
	// A raw getsockname: x/sys's Getsockname asks the socket's protocol
	// with a getsockopt through the runtime's path, the very wake-up
	// DialRaw is there to save.
	var sa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	if _, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&n))); e != 0 {
		return nil
	}
	switch sa.Addr.Family {
	case unix.AF_INET:
		in := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa))
		return &net.TCPAddr{IP: net.IP(in.Addr[:]).To16(), Port: port(in.Port)}
	case unix.AF_INET6:
		in := (*unix.RawSockaddrInet6)(unsafe.Pointer(&sa))
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), in.Addr[:]...)), Port: port(in.Port)}
	}
	return nil
}

// port reads a port in network byte order.
func port(p uint16) int {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return int(b[0])<<8 | int(b[1])
}

// rawConn is DialRaw's connection.
type rawConn struct {
	f             *os.File
	rc            syscall.RawConn
	local, remote *net.TCPAddr
	// lingering takes the file on Close while its FIN is unacknowledged;
	// closed is set then, for the connection to answer as a closed one.
	lingering *lingering
	closed    atomic.Bool
}

var _ net.Conn = (*rawConn)(nil)

func (c *rawConn) Read(p []byte) (int, error) {
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

func (c *rawConn) Write(p []byte) (int, error) {
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

// Close ends the connection as net's close with the kubelet's SO_LINGER
// does on the wire (a FIN, or a RST with data unread). The FIN goes out
// with a raw shutdown, and the File is left to the dialer's lingering set
// (a later dial's sweep closes it: see lingering). The connection is
// closed to its users at once: a read or write waiting on it returns, and
// every later one fails, with net.ErrClosed.
func (c *rawConn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return c.opError("close", net.ErrClosed)
	}
	var held bool
	_ = c.rc.Control(func(fd uintptr) { held = c.lingering.closeFile(c.f, int(fd), time.Now()) })
	if held {
		// Whatever waits on the connection returns now.
		_ = c.f.SetDeadline(time.Unix(1, 0))
		return nil
	}
	if err := c.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return c.opError("close", err)
	}
	return nil
}

func (c *rawConn) LocalAddr() net.Addr           { return c.local }
func (c *rawConn) RemoteAddr() net.Addr          { return c.remote }
func (c *rawConn) SetDeadline(t time.Time) error { return c.deadline("set", c.f.SetDeadline, t) }
func (c *rawConn) SetReadDeadline(t time.Time) error {
	return c.deadline("set", c.f.SetReadDeadline, t)
}
func (c *rawConn) SetWriteDeadline(t time.Time) error {
	return c.deadline("set", c.f.SetWriteDeadline, t)
}

// deadline sets one of the file's deadlines unless the connection is closed.
func (c *rawConn) deadline(op string, set func(time.Time) error, t time.Time) error {
	if !c.closed.Load() && set(t) == nil {
		return nil
	}
	// The file refuses a deadline only once closed; net names the local
	// address alone here.
	return &net.OpError{Op: op, Net: "tcp", Addr: c.local, Err: net.ErrClosed}
}

// errFileClosing is the text of internal/poll's ErrFileClosing, which an
// os.File's RawConn returns once closed (net's is net.ErrClosed).
const errFileClosing = "use of closed file"

// opError is net's error for op on the connection; os.File's deadline and
// closed errors become net's.
func (c *rawConn) opError(op string, err error) error {
	switch {
	case c.closed.Load():
		err = net.ErrClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = os.ErrDeadlineExceeded
	case errors.Is(err, os.ErrClosed) || err.Error() == errFileClosing:
		err = net.ErrClosed
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
}
