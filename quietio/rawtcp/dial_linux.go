//go:build linux

package rawtcp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/quietio/deadline"
	"github.com/probelet/probelet/quietio/rawconn"
)

// Dialer makes probe connections; its zero value is ready. It holds the
// sockets whose close it put off (lingering), so one Dialer serves a
// process's probes.
type Dialer struct {
	lingering lingering
}

// Start connects to addr without blocking. A dial that failed at once
// (refused, unreachable) is net's error; one that completed within the
// connecting call is closed as the kubelet's prober closes it, and Start
// returns neither; otherwise the Pending is the handshake under way, for
// Finish on another goroutine.
func (d *Dialer) Start(addr netip.AddrPort) (*Pending, error) {
	return d.StartFrom(addr, nil)
}

// Socket makes a probe's non-blocking TCP socket for an address's family,
// with SO_LINGER {1, 1}: how a dial from another network namespace brings
// its own (podnet). A nil Socket is this process's own.
type Socket func(netip.Addr) (int, error)

// StartFrom is Start on a socket from sock; its error, if any, is the
// dial's.
func (d *Dialer) StartFrom(addr netip.AddrPort, sock Socket) (*Pending, error) {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	d.lingering.sweep(time.Now())
	c, err := dialRaw(addr, sock)
	if err != nil {
		return nil, err
	}
	if e := c.soError(); e != 0 {
		_ = rawClose(c.fd)
		return nil, dialError(addr, os.NewSyscallError("connect", e))
	}
	if !c.connecting() {
		d.lingering.close(c.fd, time.Now())
		return nil, nil
	}
	return c, nil
}

// dialRaw is connectRaw (or, with sock, connect on its socket) with net's
// error for a failed step.
func dialRaw(addr netip.AddrPort, sock Socket) (*Pending, error) {
	if sock != nil {
		fd, err := sock(addr.Addr())
		if err != nil {
			return nil, dialError(addr, err)
		}
		if e := connect(fd, addr); e != 0 {
			_ = rawClose(fd)
			return nil, dialError(addr, os.NewSyscallError("connect", e))
		}
		return &Pending{fd: fd, addr: addr}, nil
	}
	c, serr := connectRaw(addr)
	if c == nil {
		return nil, dialError(addr, os.NewSyscallError(serr.op, serr.errno))
	}
	return c, nil
}

// dialError is net's text for a failed dial: "dial tcp ADDR: connect: …".
func dialError(addr netip.AddrPort, err error) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(addr), Err: err}
}

// Pending is a probe socket whose connect was issued.
type Pending struct {
	fd   int
	addr netip.AddrPort
}

type sysErr struct {
	op    string
	errno unix.Errno
}

// connectRaw opens a non-blocking socket with SO_LINGER {1, 1} and
// connects it to addr. A nil conn is a failure of the step named in the
// error (the socket is closed).
func connectRaw(addr netip.AddrPort) (*Pending, sysErr) {
	family := unix.AF_INET
	if addr.Addr().Is6() {
		family = unix.AF_INET6
	}
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if e != 0 {
		return nil, sysErr{"socket", e}
	}
	c := &Pending{fd: int(fd), addr: addr}
	l := unix.Linger{Onoff: 1, Linger: 1}
	if e := setsockopt(c.fd, unix.SOL_SOCKET, unix.SO_LINGER, unsafe.Pointer(&l), unsafe.Sizeof(l)); e != 0 {
		_ = rawClose(c.fd)
		return nil, sysErr{"setsockopt", e}
	}
	if e := connect(c.fd, addr); e != 0 {
		_ = rawClose(c.fd)
		return nil, sysErr{"connect", e}
	}
	return c, sysErr{}
}

// connect issues fd's non-blocking connect to addr: 0 once issued (or
// done), else its error.
func connect(fd int, addr netip.AddrPort) unix.Errno {
	var sa unsafe.Pointer
	var salen uintptr
	if !addr.Addr().Is6() {
		s := &unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: addr.Addr().As4()}
		putPort(&s.Port, addr.Port())
		sa, salen = unsafe.Pointer(s), unsafe.Sizeof(*s)
	} else {
		s := &unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: addr.Addr().As16()}
		putPort(&s.Port, addr.Port())
		sa, salen = unsafe.Pointer(s), unsafe.Sizeof(*s)
	}
	_, _, e := unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(sa), salen)
	switch e {
	case 0, unix.EINPROGRESS, unix.EINTR, unix.EALREADY:
		return 0
	}
	return e
}

// putPort stores p in network byte order.
func putPort(dst *uint16, p uint16) {
	b := (*[2]byte)(unsafe.Pointer(dst))
	b[0], b[1] = byte(p>>8), byte(p)
}

func setsockopt(fd, level, name int, v unsafe.Pointer, n uintptr) unix.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name), uintptr(v), n, 0)
	return e
}

func rawClose(fd int) unix.Errno {
	_, _, e := unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
	return e
}

// tcpState reads the socket's TCP state (linux/tcp_states.h).
func tcpState(fd int) (uint8, unix.Errno) {
	var info unix.TCPInfo
	n := uint32(unsafe.Sizeof(info))
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_INFO, uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&n)), 0)
	return info.State, e
}

// TCP states, from linux/tcp_states.h.
const (
	stateSynSent  = 2
	stateFinWait1 = 4
	stateClosing  = 11
	stateLastAck  = 9
)

// connecting reports whether the handshake is still under way; read after
// soError, which takes a failed handshake's error.
func (c *Pending) connecting() bool {
	s, e := tcpState(c.fd)
	return e != 0 || s == stateSynSent
}

// soError takes the connect's error: 0 while in progress or once connected.
func (c *Pending) soError() unix.Errno {
	var v int32
	n := uint32(4)
	if _, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(c.fd), unix.SOL_SOCKET, unix.SO_ERROR, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&n)), 0); e != 0 {
		return e
	}
	return unix.Errno(v)
}

// Finish waits in the netpoller until the connect completes, until
// deadline (net's dial error "i/o timeout", as the kubelet's dial timeout
// ends it), or until ctx ends (ctx's error, unwrapped), and closes the
// socket as the kubelet's prober does, blocking in close for at most the
// linger second. nil is a connection made; net's dial error a failed one.
func (c *Pending) Finish(ctx context.Context, at time.Time) error {
	// A non-blocking descriptor makes a pollable File.
	f := os.NewFile(uintptr(c.fd), "tcp-probe")
	defer f.Close()
	if err := ctx.Err(); err != nil {
		return err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	timed, cancel := deadline.WithDeadline(ctx, at)
	defer cancel()
	ctxErr, err := c.await(timed, f, rc)
	if err := ctx.Err(); err != nil {
		return err
	}
	if ctxErr != nil {
		err = os.ErrDeadlineExceeded // net's "i/o timeout"
	}
	if err != nil {
		return dialError(c.addr, err)
	}
	return nil
}

// await waits in the netpoller, on c's File f, until c's connect
// completed or failed, or ctx ended (its deadline included: the wait has
// no timer of its own, which would linger in the runtime's timer heap and
// wake the process). It returns ctx's error when ctx ended, else the
// connect's failure, nil once connected. A connect that is already done
// (the common case) waits for nothing.
func (c *Pending) await(ctx context.Context, f *os.File, rc syscall.RawConn) (ctxErr, err error) {
	if e := c.soError(); e != 0 {
		return nil, os.NewSyscallError("connect", e)
	}
	if !c.connecting() {
		return nil, nil
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	var soErr unix.Errno
	werr := rc.Write(func(uintptr) bool {
		soErr = c.soError()
		return soErr != 0 || !c.connecting()
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err(), nil
	case werr != nil:
		return nil, werr
	case soErr != 0:
		return nil, os.NewSyscallError("connect", soErr)
	}
	return nil, nil
}

// Dial connects to addr for a probe's request and reply (HTTP, gRPC): the
// connection's socket, connect, reads, writes and shutdown are raw,
// non-blocking system calls, waiting only in the Go netpoller, and its
// close is the one call through the runtime's system-call path. Every call
// through that path wakes the runtime's monitor thread of an otherwise idle
// process, which then naps every 20 µs for as long as the process is busy:
// with net's connection, most of a probe's wake-ups (hack/bench/engine).
//
// The connection answers as net's does: the same errors, with net's texts
// ("dial tcp ADDR: connect: …", "read tcp LOCAL->REMOTE: read: …"), and
// deadlines.
func (d *Dialer) Dial(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	return d.DialFrom(ctx, addr, nil)
}

// DialFrom is Dial on a socket from sock.
func (d *Dialer) DialFrom(ctx context.Context, addr netip.AddrPort, sock Socket) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, dialError(addr, netContextError(err))
	}
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	d.lingering.sweep(time.Now())
	c, err := dialRaw(addr, sock)
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
