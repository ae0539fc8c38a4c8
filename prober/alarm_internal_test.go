package prober

import (
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// waitReturns fails unless a.wait returns (within a generous bound: the
// test checks that it returns, not how fast).
func waitReturns(t *testing.T, a alarm, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		a.wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: wait never returned", what)
	}
}

// realAlarms are the alarms the real clock can use here.
func realAlarms(t *testing.T) map[string]alarm {
	alarms := map[string]alarm{"clock": newClockAlarm(clock.RealClock{})}
	if a, err := newTimerfdAlarm(); err == nil {
		alarms["timerfd"] = a
	} else {
		t.Logf("no timer file alarm: %v", err)
	}
	return alarms
}

func TestAlarmGoesOffAndFires(t *testing.T) {
	for name, a := range realAlarms(t) {
		t.Run(name, func(t *testing.T) {
			defer a.close()
			a.set(time.Millisecond)
			waitReturns(t, a, "set")
			a.fire()
			waitReturns(t, a, "fired before the wait")
			a.set(time.Hour)
			a.fire()
			waitReturns(t, a, "fired after a set")
			a.disarm()
			a.fire()
			waitReturns(t, a, "fired after a disarm")
			a.set(time.Hour)
			done := make(chan struct{})
			go func() {
				a.wait()
				close(done)
			}()
			a.fire()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a fire did not end a wait in progress")
			}
		})
	}
}

func TestTimerfdAlarmCloseEndsAWait(t *testing.T) {
	a, err := newTimerfdAlarm()
	if err != nil {
		t.Skipf("no timer files: %v", err)
	}
	a.set(time.Hour)
	done := make(chan struct{})
	go func() {
		a.wait()
		close(done)
	}()
	a.close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not end the wait")
	}
}

func TestNewAlarmUsesTheClock(t *testing.T) {
	_, err := newTimerfdAlarm()
	for _, c := range []clock.Clock{clock.RealClock{}, &clock.RealClock{}} {
		a := newAlarm(c)
		if _, goTimer := a.(*clockAlarm); goTimer && err == nil {
			t.Fatalf("the real clock (%T) got a Go timer where a timer file works", c)
		}
		a.close()
	}
	fake := newAlarm(clocktesting.NewFakeClock(time.Now()))
	if _, ok := fake.(*clockAlarm); !ok {
		t.Fatalf("a fake clock got %T, want a timer of its own", fake)
	}
}

// BenchmarkAlarmWakeUp is one sleep and wake-up of the scheduler's alarm
// on the real clock, 20 ms apart (a node's probes are spread over their
// period, so the process is idle in between): cpu-µs/wake-up is the CPU
// the whole process spent per wake-up (every thread, kernel included), the
// cost a probe answered from memory pays on top of its answer.
// go-timer is a Go timer; timerfd the timer file the real clock uses.
func BenchmarkAlarmWakeUp(b *testing.B) {
	const interval = 20 * time.Millisecond
	b.Run("go-timer", func(b *testing.B) { benchAlarm(b, newClockAlarm(clock.RealClock{}), interval) })
	b.Run("timerfd", func(b *testing.B) {
		a, err := newTimerfdAlarm()
		if err != nil {
			b.Skipf("no timer files: %v", err)
		}
		benchAlarm(b, a, interval)
	})
}

func benchAlarm(b *testing.B, a alarm, interval time.Duration) {
	defer a.close()
	cpu0 := processCPU()
	for b.Loop() {
		a.set(interval)
		a.wait()
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/wake-up")
}

// processCPU is the user and system time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
