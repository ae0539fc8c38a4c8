// Package timerfile is the quiet I/O's one timer: an Alarm on a Linux
// timer file the Go netpoller watches, set with raw system calls, with one
// error policy — a setting the kernel refuses hands the alarm over to a Go
// timer for good, told once — and its stand-in on a timer of any clock
// (fake clocks in tests, --io=std, systems without timer files).
//
// Why not a Go timer: when one fires in an otherwise idle process, the
// runtime wakes the thread sleeping in epoll to run it, its monitor thread
// (sysmon sleeps until the next timer, then naps 20 µs at least once before
// it sleeps again) and, with another P idle, a spinning thread that looks
// for more work: about four thread wake-ups (futex, epoll_pwait, nanosleep)
// for what is often a single in-memory probe. A timer file becoming
// readable wakes only the thread in epoll, which then runs the waiting
// goroutine itself. Setting the timer never blocks, so it is a raw system
// call: one through the runtime's usual path wakes a sleeping sysmon too.
// prober's BenchmarkAlarmWakeUp has the cost of each.
package timerfile

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/probelet/probelet/quietio"
)

// Alarm is one wake-up time, which its owner sets and anyone may bring
// forward to now (Fire). Set, Disarm and Fire must be ordered by the
// owner (the kernel clears a pending expiration on every setting); Wait is
// called by one goroutine at a time.
type Alarm interface {
	// Set makes the alarm go off at the given time of its clock (at once
	// when that has passed), replacing any earlier setting.
	Set(at time.Time)
	// Disarm cancels the wake-up set last; a Fire still wakes.
	Disarm()
	// Fire makes the pending or next Wait return at once.
	Fire()
	// Wait blocks until the alarm went off or fired since the last Wait
	// (or, rarely, returns early: callers look at their clock).
	Wait()
	// Close releases the alarm and ends a Wait in progress; Wait must not
	// be called afterwards.
	Close()
}

// New is the alarm for c: on the real clock with quiet I/O on, a timer
// file where the kernel offers one (name labels it; onError hears once of
// a later fall-back to a Go timer); otherwise a timer of c.
func New(c clock.Clock, name string, onError func(error)) Alarm {
	switch c.(type) {
	case clock.RealClock, *clock.RealClock:
		if quietio.Off() {
			break // --io=std: a Go timer
		}
		if f, err := Open(name, onError); err == nil {
			return f
		}
	}
	return NewClockAlarm(c)
}

// ClockAlarm is an Alarm made of a timer of any clock and a channel for
// Fire.
type ClockAlarm struct {
	clock clock.Clock
	timer clock.Timer
	woken chan struct{}
}

// NewClockAlarm is a disarmed alarm on c.
func NewClockAlarm(c clock.Clock) *ClockAlarm {
	t := c.NewTimer(time.Hour)
	t.Stop()
	return &ClockAlarm{clock: c, timer: t, woken: make(chan struct{}, 1)}
}

func (a *ClockAlarm) Set(at time.Time) {
	a.Disarm()
	d := at.Sub(a.clock.Now())
	if d <= 0 {
		a.Fire()
		return
	}
	a.timer.Reset(d)
	// A clock that steps (a fake one) between Now and Reset moved the
	// timer's target a whole step past at, and would go off only at the
	// step after: go off now instead. A real clock's gap is harmless.
	if !a.clock.Now().Before(at) {
		a.Fire()
	}
}

// Disarm stops the timer and drains a tick it already sent, so a fake
// clock never blocks sending a second one.
func (a *ClockAlarm) Disarm() {
	if !a.timer.Stop() {
		select {
		case <-a.timer.C():
		default:
		}
	}
}

func (a *ClockAlarm) Fire() {
	select {
	case a.woken <- struct{}{}:
	default:
	}
}

func (a *ClockAlarm) Wait() {
	select {
	case <-a.woken:
	case <-a.timer.C():
	}
}

// Close stops the timer and ends a Wait in progress.
func (a *ClockAlarm) Close() {
	a.timer.Stop()
	a.Fire()
}
