//go:build linux

package tcpprobe

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/quietio/rawconn"
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
	if ctxErr, err := c.await(ctx, f, rc); ctxErr != nil || err != nil {
		_ = f.Close()
		if ctxErr != nil {
			err = netContextError(ctxErr)
		}
		return nil, dialError(addr, err)
	}
	// Closed as the kubelet's close would, without waiting (lingering).
	closer := func(f *os.File, fd int) bool { return d.lingering.closeFile(f, fd, time.Now()) }
	conn, err := rawconn.New(f, "tcp", localAddr(c.fd), net.TCPAddrFromAddrPort(addr), closer)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return conn, nil
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
