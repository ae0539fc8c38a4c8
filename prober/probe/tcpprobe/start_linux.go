//go:build linux

package tcpprobe

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/quietio"
	"github.com/probelet/probelet/quietio/deadline"
)

// StartTCP is ProbeTCP begun without blocking, for the engine's scheduling
// goroutine: the socket with the kubelet's SO_LINGER {1, 1}, a
// non-blocking connect, and — when the handshake completed or was refused
// within connect, as it mostly is for a pod on this node (the kernel runs
// both ends of a loopback or veth handshake in the connecting call) — the
// answer and the close, with ok true. Otherwise pending carries the
// connection in progress, and its Finish, on a runner, waits for it as
// ProbeTCP would. A target it does not dial this way (a host that is not
// an IP literal, a port no dial can use) gets ok false and no pending: the
// caller runs ProbeTCP.
//
// Why: every system call here is a raw one, so nothing wakes the Go
// runtime's monitor thread, and the probe needs no goroutine of its own.
// A probe dialled this way costs the few system calls of the handshake
// instead of the half a dozen thread wake-ups of a dial handed to a
// goroutine (hack/bench/engine). On the wire it is the kubelet's dial:
// SYN, and a FIN once connected — or a RST when the target already sent
// data, as the kubelet's close does with data unread.
func (d *Dialer) StartTCP(target probe.TCPTarget) (res probe.Result, output string, method probe.Method, pending probe.TCPPending, ok bool) {
	if d.control == nil || target.Timeout <= 0 || target.Port < 1 || target.Port > 65535 || quietio.Off() {
		return probe.Unknown, "", probe.MethodDial, nil, false
	}
	ip, err := netip.ParseAddr(target.Host)
	if err != nil || ip.Zone() != "" {
		return probe.Unknown, "", probe.MethodDial, nil, false
	}
	d.lingering.sweep(time.Now())
	addr := netip.AddrPortFrom(ip.Unmap(), uint16(target.Port))
	c, err := dialRaw(addr)
	if err != nil {
		return probe.Failure, err.Error(), probe.MethodDial, nil, true
	}
	if e := c.soError(); e != 0 {
		_ = rawClose(c.fd)
		return probe.Failure, dialError(addr, os.NewSyscallError("connect", e)).Error(), probe.MethodDial, nil, true
	}
	if !c.connecting() {
		d.lingering.close(c.fd, time.Now())
		return probe.Success, "", probe.MethodDial, nil, true
	}
	c.deadline = time.Now().Add(target.Timeout)
	return probe.Unknown, "", probe.MethodDial, c, false
}

// dialRaw is connectRaw with net's error for a failed step.
func dialRaw(addr netip.AddrPort) (*conn, error) {
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

// conn is a probe socket whose connect was issued.
type conn struct {
	fd       int
	addr     netip.AddrPort
	deadline time.Time // StartTCP's: when the probe's timeout ends
}

type sysErr struct {
	op    string
	errno unix.Errno
}

// connectRaw opens a non-blocking socket with SO_LINGER {1, 1} and
// connects it to addr. A nil conn is a failure of the step named in the
// error (the socket is closed).
func connectRaw(addr netip.AddrPort) (*conn, sysErr) {
	family := unix.AF_INET
	if addr.Addr().Is6() {
		family = unix.AF_INET6
	}
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if e != 0 {
		return nil, sysErr{"socket", e}
	}
	c := &conn{fd: int(fd), addr: addr}
	l := unix.Linger{Onoff: 1, Linger: 1}
	if e := setsockopt(c.fd, unix.SOL_SOCKET, unix.SO_LINGER, unsafe.Pointer(&l), unsafe.Sizeof(l)); e != 0 {
		_ = rawClose(c.fd)
		return nil, sysErr{"setsockopt", e}
	}
	var sa unsafe.Pointer
	var salen uintptr
	if family == unix.AF_INET {
		s := &unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: addr.Addr().As4()}
		putPort(&s.Port, addr.Port())
		sa, salen = unsafe.Pointer(s), unsafe.Sizeof(*s)
	} else {
		s := &unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: addr.Addr().As16()}
		putPort(&s.Port, addr.Port())
		sa, salen = unsafe.Pointer(s), unsafe.Sizeof(*s)
	}
	_, _, e = unix.RawSyscall(unix.SYS_CONNECT, fd, uintptr(sa), salen)
	switch e {
	case 0, unix.EINPROGRESS, unix.EINTR, unix.EALREADY:
		return c, sysErr{}
	}
	_ = rawClose(c.fd)
	return nil, sysErr{"connect", e}
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
func (c *conn) connecting() bool {
	s, e := tcpState(c.fd)
	return e != 0 || s == stateSynSent
}

// soError takes the connect's error: 0 while in progress or once connected.
func (c *conn) soError() unix.Errno {
	var v int32
	n := uint32(4)
	if _, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(c.fd), unix.SOL_SOCKET, unix.SO_ERROR, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&n)), 0); e != 0 {
		return e
	}
	return unix.Errno(v)
}

// Finish waits for the connect in the netpoller until the probe's timeout
// (counted from StartTCP) or ctx's end, and closes the socket as the
// kubelet's prober does, blocking in close for at most the linger second.
func (c *conn) Finish(ctx context.Context) (probe.Result, string, probe.Method, error) {
	// A non-blocking descriptor makes a pollable File.
	f := os.NewFile(uintptr(c.fd), "tcp-probe")
	defer f.Close()
	if ctx.Err() != nil {
		return probe.Unknown, "", probe.MethodDial, probeCancelled(c.addr, ctx.Err())
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return probe.Unknown, "", probe.MethodDial, err
	}
	// The probe's timeout ends the wait as a failure, as the kubelet's
	// dial timeout does; ctx's end is a cancelled probe.
	timed, cancel := deadline.WithDeadline(ctx, c.deadline)
	defer cancel()
	ctxErr, err := c.await(timed, f, rc)
	if ctx.Err() != nil {
		return probe.Unknown, "", probe.MethodDial, probeCancelled(c.addr, ctx.Err())
	}
	if ctxErr != nil {
		err = os.ErrDeadlineExceeded // net's "i/o timeout"
	}
	if err != nil {
		return probe.Failure, dialError(c.addr, err).Error(), probe.MethodDial, nil
	}
	return probe.Success, "", probe.MethodDial, nil
}

// await waits in the netpoller, on c's File f, until c's connect
// completed or failed, or ctx ended (its deadline included: the wait has
// no timer of its own, which would linger in the runtime's timer heap and
// wake the process). It returns ctx's error when ctx ended, else the
// connect's failure, nil once connected. A connect that is already done
// (the common case) waits for nothing.
func (c *conn) await(ctx context.Context, f *os.File, rc syscall.RawConn) (ctxErr, err error) {
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

// lingering holds probe sockets whose FIN is out but whose close would
// cost more now than later. A socket whose FIN is not acknowledged yet
// would block its close for up to the linger second, as the kubelet's
// close does: it is held until a sweep (on a later probe's start) finds it
// acknowledged, and one still waiting after the linger second is closed
// on a goroutine of its own, blocking as the kubelet's would. A
// connection's File (DialRaw's) is closed through the runtime's
// system-call path, which wakes its sleeping monitor thread: acknowledged
// ones are closed together, a batch at a time or once the oldest has
// waited the linger second. The FIN, the only thing the target sees, goes
// out at once either way.
type lingering struct {
	mu sync.Mutex
	// unacked wait for their FIN's ACK; acked are Files ready to close.
	unacked []lingeringSock
	acked   []lingeringSock
}

type lingeringSock struct {
	fd int
	// file is the descriptor's owner for DialRaw's connections (nil for
	// StartTCP's raw ones): closing it deregisters it from the netpoller.
	file  *os.File
	since time.Time
}

// closeBlocking closes the socket through the runtime, which lets another
// thread run while the close waits.
func (s lingeringSock) closeBlocking() {
	if s.file != nil {
		_ = s.file.Close()
		return
	}
	_ = unix.Close(s.fd)
}

// maxLingering bounds the sockets held: beyond it the oldest are closed
// the kubelet's way at once.
const maxLingering = 1024

// fileBatch is how many acknowledged Files are closed together.
const fileBatch = 16

// lingerTime is the kubelet's SO_LINGER timeout.
const lingerTime = time.Second

// close ends a connected probe socket without blocking: with data unread
// the close resets the connection (as the kubelet's does); otherwise the
// FIN goes out now and the socket is closed at once when the kernel has
// it acknowledged already, or kept until a sweep finds it so.
func (l *lingering) close(fd int, now time.Time) {
	if !sendFIN(uintptr(fd)) || !closeWouldWait(fd) {
		_ = rawClose(fd)
		return
	}
	l.hold(lingeringSock{fd: fd, since: now})
}

// closeFile ends a DialRaw connection's File as close does a raw socket,
// except that an acknowledged one waits for its batch. It reports false
// for a File with data unread, which the caller closes (a reset) at once.
func (l *lingering) closeFile(f *os.File, fd int, now time.Time) bool {
	if !sendFIN(uintptr(fd)) {
		return false
	}
	s := lingeringSock{fd: fd, file: f, since: now}
	if closeWouldWait(fd) {
		l.hold(s)
		return true
	}
	l.mu.Lock()
	l.acked = append(l.acked, s)
	l.mu.Unlock()
	return true
}

// hold keeps s until its FIN is acknowledged.
func (l *lingering) hold(s lingeringSock) {
	l.mu.Lock()
	l.unacked = append(l.unacked, s)
	var over []lingeringSock
	if len(l.unacked) > maxLingering {
		over = l.unacked[:len(l.unacked)-maxLingering]
		l.unacked = append([]lingeringSock(nil), l.unacked[len(over):]...)
	}
	l.mu.Unlock()
	for _, s := range over {
		go s.closeBlocking()
	}
}

// sendFIN sends the FIN the kubelet's close would, with a raw shutdown,
// and reports whether it did: with data unread it does not, for the close
// to reset the connection as the kubelet's does.
func sendFIN(fd uintptr) bool {
	var n int32
	if _, _, e := unix.RawSyscall(unix.SYS_IOCTL, fd, unix.SIOCINQ, uintptr(unsafe.Pointer(&n))); e == 0 && n > 0 {
		return false
	}
	_, _, e := unix.RawSyscall(unix.SYS_SHUTDOWN, fd, unix.SHUT_WR, 0)
	return e == 0
}

// sweep closes the raw sockets whose close no longer waits and moves such
// Files to the acknowledged, hands those past the linger second to a
// blocking close, and closes the acknowledged Files when a batch is full
// or its oldest has waited the linger second.
func (l *lingering) sweep(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.unacked[:0]
	for _, s := range l.unacked {
		waits := closeWouldWait(s.fd)
		switch {
		case !waits && s.file == nil:
			_ = rawClose(s.fd)
		case !waits:
			l.acked = append(l.acked, s)
		case now.Sub(s.since) >= lingerTime:
			go s.closeBlocking()
		default:
			kept = append(kept, s)
		}
	}
	clear(l.unacked[len(kept):])
	l.unacked = kept
	if len(l.acked) >= fileBatch || (len(l.acked) > 0 && now.Sub(l.acked[0].since) >= lingerTime) {
		for _, s := range l.acked {
			_ = s.file.Close()
		}
		clear(l.acked)
		l.acked = l.acked[:0]
	}
}

// closeWouldWait reports whether close would block on SO_LINGER: the FIN
// sent and not yet acknowledged.
func closeWouldWait(fd int) bool {
	s, e := tcpState(fd)
	return e == 0 && (s == stateFinWait1 || s == stateClosing || s == stateLastAck)
}

// probeCancelled is ProbeTCP's error for a probe whose ctx ended.
func probeCancelled(addr netip.AddrPort, err error) error {
	return fmt.Errorf("tcp probe of %s: %w", addr, err)
}
