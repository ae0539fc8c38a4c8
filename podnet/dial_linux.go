//go:build linux

package podnet

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// DialTCP connects to addr from n with the kubelet's probe socket (SO_LINGER
// {1, 1}) and returns net's own connection for it (net.FileConn): the
// libraries' path (--io=std), and the probe dial where no quiet I/O runs.
// Its errors are net.Dialer's, in its words: "dial tcp ADDR: connect: …",
// "i/o timeout" at ctx's deadline, "operation was canceled" on a cancel.
// A namespace released under it is ErrGone, wrapped.
func (n *Namespace) DialTCP(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	fail := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr), Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(contextError(err))
	}
	fd, err := n.TCPSocket(addr.Addr())
	if err != nil {
		return nil, fail(err)
	}
	if err := unix.Connect(fd, sockaddr(addr)); err != nil && err != unix.EINPROGRESS && err != unix.EINTR && err != unix.EALREADY {
		_ = unix.Close(fd)
		return nil, fail(os.NewSyscallError("connect", err))
	}
	// A non-blocking descriptor makes a pollable File: the connect is
	// awaited in the netpoller, as net awaits its own.
	f := os.NewFile(uintptr(fd), "tcp-probe")
	defer f.Close()
	if err := awaitConnect(ctx, f); err != nil {
		return nil, fail(err)
	}
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fail(err)
	}
	return conn, nil
}

// TCPSocket is a non-blocking TCP socket for ip's family in n, with the
// kubelet's SO_LINGER {1, 1}; its errors are SocketErrors.
func (n *Namespace) TCPSocket(ip netip.Addr) (int, error) {
	family := unix.AF_INET
	if ip.Is6() && !ip.Is4In6() {
		family = unix.AF_INET6
	}
	fd, err := n.Socket(family, unix.SOCK_STREAM, unix.IPPROTO_TCP)
	if err != nil {
		return -1, err
	}
	if err := rawLinger(fd); err != nil {
		rawClose(fd)
		return -1, &SocketError{Namespace: n.String(), Err: os.NewSyscallError("setsockopt", err)}
	}
	return fd, nil
}

// awaitConnect waits until f's connect completed (nil), failed (the
// connect's error) or ctx ended (net's word for it).
func awaitConnect(ctx context.Context, f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok {
		_ = f.SetWriteDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	var soErr error
	werr := rc.Write(func(fd uintptr) bool {
		v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
		switch {
		case err != nil:
			soErr = os.NewSyscallError("getsockopt", err)
		case v != 0:
			soErr = os.NewSyscallError("connect", unix.Errno(v))
		default:
			// Connected once the peer is known; ENOTCONN while the
			// handshake is under way.
			_, err := unix.Getpeername(int(fd))
			return err == nil
		}
		return true
	})
	switch {
	case ctx.Err() != nil:
		return contextError(ctx.Err())
	case errors.Is(werr, os.ErrDeadlineExceeded):
		return os.ErrDeadlineExceeded
	case werr != nil:
		return werr
	}
	return soErr
}

// canceledError is net's error for a dial whose ctx was cancelled: its
// text, and errors.Is context.Canceled.
type canceledError struct{}

func (canceledError) Error() string        { return "operation was canceled" }
func (canceledError) Is(target error) bool { return target == context.Canceled }

var errCanceled error = canceledError{}

// contextError is net's word for a dial's ended ctx: "i/o timeout" for a
// deadline, "operation was canceled" for a cancel.
func contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return os.ErrDeadlineExceeded
	}
	return errCanceled
}

func sockaddr(addr netip.AddrPort) unix.Sockaddr {
	if addr.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	}
	return &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
}
