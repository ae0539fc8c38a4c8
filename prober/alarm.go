package prober

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/probelet/probelet/quietio"
)

// alarm is what the scheduler goroutine sleeps on: one wake-up time, which
// the scheduler sets and anyone may bring forward to now (fire). set,
// disarm and fire are called under Manager.mu, which orders a fire after a
// set; wait is called by the scheduler goroutine alone, without the lock.
type alarm interface {
	// set makes the alarm go off at the given time of its clock (at once
	// when that has passed), replacing any earlier setting.
	set(at time.Time)
	// disarm cancels the wake-up set last; a fire still wakes.
	disarm()
	// fire makes the pending or next wait return at once.
	fire()
	// wait blocks until the alarm went off or fired since the last wait.
	wait()
	// close releases the alarm; wait must not be called afterwards.
	close()
}

// newAlarm picks the alarm for c: on the real clock, a timer file where the
// kernel offers one (see timerfdAlarm: a wake-up is then one thread waking,
// not the four a Go timer costs); otherwise a timer of c, as tests with a
// fake clock need. onError hears of a timer file that failed later and
// handed over to a Go timer.
func newAlarm(c clock.Clock, onError func(error)) alarm {
	switch c.(type) {
	case clock.RealClock, *clock.RealClock:
		if quietio.Off() {
			break // --io=std: a Go timer, and nothing runs inline
		}
		if a, err := newTimerfdAlarm(onError); err == nil {
			return a
		}
	}
	return newClockAlarm(c)
}

// clockAlarm is an alarm made of a timer of any clock and a channel for
// fire.
type clockAlarm struct {
	clock clock.Clock
	timer clock.Timer
	woken chan struct{}
}

func newClockAlarm(c clock.Clock) *clockAlarm {
	t := c.NewTimer(time.Hour)
	t.Stop()
	return &clockAlarm{clock: c, timer: t, woken: make(chan struct{}, 1)}
}

func (a *clockAlarm) set(at time.Time) {
	a.disarm()
	d := at.Sub(a.clock.Now())
	if d <= 0 {
		a.fire()
		return
	}
	a.timer.Reset(d)
	// A clock that steps (a fake one) between Now and Reset moved the
	// timer's target a whole step past at, and would go off only at the
	// step after: go off now instead. A real clock's gap is harmless.
	if !a.clock.Now().Before(at) {
		a.fire()
	}
}

// disarm stops the timer and drains a tick it already sent, so a fake
// clock never blocks sending a second one.
func (a *clockAlarm) disarm() {
	if !a.timer.Stop() {
		select {
		case <-a.timer.C():
		default:
		}
	}
}

func (a *clockAlarm) fire() {
	select {
	case a.woken <- struct{}{}:
	default:
	}
}

func (a *clockAlarm) wait() {
	select {
	case <-a.woken:
	case <-a.timer.C():
	}
}

func (a *clockAlarm) close() { a.timer.Stop() }
