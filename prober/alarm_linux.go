//go:build linux

package prober

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

// timerfdAlarm is the real clock's alarm on Linux: a timer file watched by
// the Go netpoller, set and read with raw system calls.
//
// Why not a Go timer: when one fires in an otherwise idle process, the
// runtime wakes the thread sleeping in epoll to run it, its monitor thread
// (sysmon sleeps until the next timer, then naps 20 µs at least once before
// it sleeps again) and, with another P idle, a spinning thread that looks
// for more work: about four thread wake-ups (futex, epoll_pwait, nanosleep)
// for what is often a single in-memory probe. A timer file becoming readable
// wakes only the thread in epoll, which then runs the scheduler goroutine
// itself. Setting the timer never blocks, so it is a raw system call: one
// through the runtime's usual path wakes a sleeping sysmon too.
// BenchmarkAlarmWakeUp has the cost of each.
//
// wait makes no system call at all: whether the alarm went off is told by
// the clock (read through the vDSO) against the time it was set for, not
// by reading the expiration count, and the netpoller's wake-up is the
// other signal.
type timerfdAlarm struct {
	fd   int
	file *os.File
	conn syscall.RawConn
	base time.Time
	// due is when the alarm goes off, in nanoseconds since base on the
	// monotonic clock timer files use too: 0 once fired, MaxInt64 when
	// disarmed. It is set before the timer, so it is never later.
	due atomic.Int64
	// check is the netpoller callback of wait, made once; woken is set
	// once it ran for the wait in progress. Only the scheduler waits.
	check func(uintptr) bool
	woken bool
	// fallback takes over for good if the kernel ever refuses a setting
	// (it cannot, on an open timer file with a valid value; if it did, the
	// scheduler must still wake): set, disarm and fire go to it, and the
	// timer file is closed so that a wait in progress ends. onError hears
	// of it once.
	fallback atomic.Pointer[clockAlarm]
	onError  func(error)
}

func newTimerfdAlarm(onError func(error)) (*timerfdAlarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// A non-blocking descriptor makes a pollable File: reads wait in the
	// netpoller.
	f := os.NewFile(uintptr(fd), "prober-alarm")
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	a := &timerfdAlarm{fd: fd, file: f, conn: conn, base: time.Now(), onError: onError}
	a.due.Store(math.MaxInt64)
	a.check = a.goneOff
	return a, nil
}

// set takes a time of the real clock (the only clock this alarm serves).
func (a *timerfdAlarm) set(at time.Time) {
	if fb := a.fallback.Load(); fb != nil {
		fb.set(at)
		return
	}
	due := at.Sub(a.base)
	a.due.Store(int64(due))
	if err := a.settime(max(due-time.Since(a.base), 1)); err != nil {
		a.fallBack(err).set(at)
	}
}

func (a *timerfdAlarm) disarm() {
	if fb := a.fallback.Load(); fb != nil {
		fb.disarm()
		return
	}
	a.due.Store(math.MaxInt64)
	if err := a.settime(0); err != nil {
		a.fallBack(err)
	}
}

// fire expires the timer now: the nanosecond is the least a set timer
// takes (zero disarms it).
func (a *timerfdAlarm) fire() {
	if fb := a.fallback.Load(); fb != nil {
		fb.fire()
		return
	}
	a.due.Store(0)
	if err := a.settime(1); err != nil {
		a.fallBack(err).fire()
	}
}

// settime points the timer d from now (0 disarms it); the kernel clears a
// pending expiration, which is why fire and set are ordered by the
// Manager's lock.
func (a *timerfdAlarm) settime(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if _, _, errno := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(a.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); errno != 0 {
		return os.NewSyscallError("timerfd_settime", errno)
	}
	return nil
}

// fallBack hands over to a Go timer for good and returns it, for the
// caller to replay its call on. Closing the file ends a wait in progress:
// the scheduler goes round once for nothing, then waits on the Go timer.
func (a *timerfdAlarm) fallBack(err error) *clockAlarm {
	fb := newClockAlarm(clock.RealClock{})
	a.fallback.Store(fb)
	a.file.Close()
	if a.onError != nil {
		a.onError(err)
	}
	return fb
}

// wait returns at once when the alarm is due, else parks in the netpoller
// until the timer file becomes readable. Any wake-up from the netpoller
// counts as the alarm, even one left over from an earlier setting: the
// scheduler then goes round once more for nothing, which is cheaper than a
// read per wake-up, and never sleeps through an expiration. A closed file
// ends the wait too.
func (a *timerfdAlarm) wait() {
	if fb := a.fallback.Load(); fb != nil {
		fb.wait()
		return
	}
	a.woken = false
	_ = a.conn.Read(a.check)
}

// goneOff is wait's test: the clock before parking, the netpoller after.
func (a *timerfdAlarm) goneOff(uintptr) bool {
	if a.woken {
		return true
	}
	a.woken = true
	return time.Since(a.base) >= time.Duration(a.due.Load())
}

func (a *timerfdAlarm) close() {
	a.file.Close()
	if fb := a.fallback.Load(); fb != nil {
		fb.close()
	}
}
