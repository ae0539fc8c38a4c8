//go:build linux

package timerfile

import (
	"math"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"
)

// File is the Alarm on a timer file: set and read with raw system calls,
// waited on in the Go netpoller.
//
// Wait makes no system call at all: whether the alarm went off is told by
// the clock (read through the vDSO) against the time it was set for, not
// by reading the expiration count, and the netpoller's wake-up is the
// other signal.
type File struct {
	fd   int
	file *os.File
	conn syscall.RawConn
	base time.Time
	// due is when the alarm goes off, in nanoseconds since base on the
	// monotonic clock timer files use too: 0 once fired, MaxInt64 when
	// disarmed. It is set before the timer, so it is never later.
	due atomic.Int64
	// check is the netpoller callback of Wait, made once; woken is set
	// once it ran for the Wait in progress (one goroutine waits).
	check func(uintptr) bool
	woken bool
	// fallback takes over for good if the kernel ever refuses a setting
	// (it cannot, on an open timer file with a valid value; if it did, the
	// owner must still wake): Set, Disarm and Fire go to it, and the
	// timer file is closed so that a Wait in progress ends. onError hears
	// of it once.
	fallback atomic.Pointer[ClockAlarm]
	onError  func(error)
}

// Open makes a timer file named name (in /proc/self/fd and errors);
// onError hears once of a setting the kernel refused, after which the File
// is a Go timer for good.
func Open(name string, onError func(error)) (*File, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// A non-blocking descriptor makes a pollable File: reads wait in the
	// netpoller.
	f := os.NewFile(uintptr(fd), name)
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	a := &File{fd: fd, file: f, conn: conn, base: time.Now(), onError: onError}
	a.due.Store(math.MaxInt64)
	a.check = a.goneOff
	return a, nil
}

// set takes a time of the real clock (the only clock this alarm serves).
func (a *File) Set(at time.Time) {
	if fb := a.fallback.Load(); fb != nil {
		fb.Set(at)
		return
	}
	due := at.Sub(a.base)
	a.due.Store(int64(due))
	if err := a.settime(max(due-time.Since(a.base), 1)); err != nil {
		a.fallBack(err).Set(at)
	}
}

func (a *File) Disarm() {
	if fb := a.fallback.Load(); fb != nil {
		fb.Disarm()
		return
	}
	a.due.Store(math.MaxInt64)
	if err := a.settime(0); err != nil {
		a.fallBack(err)
	}
}

// fire expires the timer now: the nanosecond is the least a set timer
// takes (zero disarms it).
func (a *File) Fire() {
	if fb := a.fallback.Load(); fb != nil {
		fb.Fire()
		return
	}
	a.due.Store(0)
	if err := a.settime(1); err != nil {
		a.fallBack(err).Fire()
	}
}

// settime points the timer d from now (0 disarms it); the kernel clears a
// pending expiration, which is why Fire and Set are ordered by the
// owner.
func (a *File) settime(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if _, _, errno := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(a.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); errno != 0 {
		return os.NewSyscallError("timerfd_settime", errno)
	}
	return nil
}

// fallBack hands over to a Go timer for good and returns it, for the
// caller to replay its call on. Closing the file ends a Wait in progress:
// the owner goes round once for nothing, then waits on the Go timer.
func (a *File) fallBack(err error) *ClockAlarm {
	fb := NewClockAlarm(clock.RealClock{})
	a.fallback.Store(fb)
	a.file.Close()
	if a.onError != nil {
		a.onError(err)
	}
	return fb
}

// Wait returns at once when the alarm is due, else parks in the netpoller
// until the timer file becomes readable. Any wake-up from the netpoller
// counts as the alarm, even one left over from an earlier setting: the
// owner then goes round once more for nothing, which is cheaper than a
// read per wake-up, and never sleeps through an expiration. A closed file
// ends the Wait too. An alarm that went off stays due until it is Set or
// Disarmed again: an owner does one or the other after each wake-up.
func (a *File) Wait() {
	if fb := a.fallback.Load(); fb != nil {
		fb.Wait()
		return
	}
	a.woken = false
	_ = a.conn.Read(a.check)
}

// goneOff is Wait's test: the clock before parking, the netpoller after.
func (a *File) goneOff(uintptr) bool {
	if a.woken {
		return true
	}
	a.woken = true
	return time.Since(a.base) >= time.Duration(a.due.Load())
}

func (a *File) Close() {
	a.file.Close()
	if fb := a.fallback.Load(); fb != nil {
		fb.Close()
	}
}
