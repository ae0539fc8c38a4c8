//go:build linux

package rawtcp

import (
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

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
