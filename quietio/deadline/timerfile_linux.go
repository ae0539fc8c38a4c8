//go:build linux

package deadline

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerFile is the wheel's alarm on Linux: a timer file the Go netpoller
// watches, set with a raw system call (one through the runtime's usual
// path would wake its sleeping monitor thread, the wake-up this package
// is there to save).
type timerFile struct {
	fd int
	rc syscall.RawConn
}

func newTimerFile() (alarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// A non-blocking descriptor makes a pollable File; the wheel keeps it
	// for the life of the process.
	f := os.NewFile(uintptr(fd), "probe-deadlines")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &timerFile{fd: fd, rc: rc}, nil
}

// set cannot fail: the timer file stays open and d is never negative (the
// wheel passes 0 to disarm, else at least a nanosecond).
func (a *timerFile) set(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_, _, _ = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(a.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}

// wait parks in the netpoller until the timer went off, and reads its
// count so that the next wait parks again.
func (a *timerFile) wait() {
	var n uint64
	_ = a.rc.Read(func(fd uintptr) bool {
		_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&n)), 8)
		return e != unix.EAGAIN
	})
}
