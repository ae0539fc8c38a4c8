package timerfile

import (
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/quietio"
)

// waitReturns fails unless a.wait returns (within a generous bound: the
// test checks that it returns, not how fast).
func waitReturns(t *testing.T, a Alarm, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		a.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: wait never returned", what)
	}
}

// realAlarms are the alarms the real clock can use here.
func realAlarms(t *testing.T) map[string]Alarm {
	alarms := map[string]Alarm{"clock": NewClockAlarm(clock.RealClock{})}
	if a, err := Open("test", nil); err == nil {
		alarms["timerfile"] = a
	} else {
		t.Logf("no timer file alarm: %v", err)
	}
	return alarms
}

func TestAlarmGoesOffAndFires(t *testing.T) {
	for name, a := range realAlarms(t) {
		t.Run(name, func(t *testing.T) {
			defer a.Close()
			goesOffAndFires(t, a)
		})
	}
}

// goesOffAndFires runs a real-clock alarm through its contract.
func goesOffAndFires(t *testing.T, a Alarm) {
	t.Helper()
	a.Set(time.Now().Add(time.Millisecond))
	waitReturns(t, a, "set")
	a.Set(time.Now().Add(-time.Second))
	waitReturns(t, a, "set in the past")
	a.Fire()
	waitReturns(t, a, "fired before the wait")
	a.Set(time.Now().Add(time.Hour))
	a.Fire()
	waitReturns(t, a, "fired after a set")
	a.Disarm()
	a.Fire()
	waitReturns(t, a, "fired after a disarm")
	a.Set(time.Now().Add(time.Hour))
	endsAWait(t, a, a.Fire, "a fire")
}

// endsAWait fails unless do ends a wait on a that is in progress.
func endsAWait(t *testing.T, a Alarm, do func(), what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		a.Wait()
		close(done)
	}()
	do() // before or after the wait parks: it must end either way
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not end a wait in progress", what)
	}
}

// TestFileFallsBackToAGoTimer: a timer file the kernel refuses a
// setting on (here an invalid value, a negative time) hands over to a Go
// timer: the wait in progress ends, the error is reported once, and the
// alarm keeps its whole contract.
func TestFileFallsBackToAGoTimer(t *testing.T) {
	var errs []error
	a, err := Open("test", func(err error) { errs = append(errs, err) })
	if err != nil {
		t.Skipf("no timer files: %v", err)
	}
	defer a.Close()
	refused := a.settime(-time.Second)
	if refused == nil {
		t.Fatal("the kernel took a negative timer setting")
	}
	a.Set(time.Now().Add(time.Hour))
	// As set, disarm and fire do: fall back, then replay the call.
	endsAWait(t, a, func() { a.fallBack(refused).Fire() }, "falling back")
	if len(errs) != 1 || errs[0] != refused {
		t.Fatalf("errors reported: %v, want the refusal once", errs)
	}
	if a.fallback.Load() == nil {
		t.Fatal("no Go timer took over")
	}
	goesOffAndFires(t, a)
	if len(errs) != 1 {
		t.Fatalf("errors reported: %v, want one", errs)
	}
}

// TestClockAlarmOnAFakeClock: set in the past goes off at once; set ahead
// goes off when the clock reaches it, not before.
func TestClockAlarmOnAFakeClock(t *testing.T) {
	c := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	a := NewClockAlarm(c)
	defer a.Close()
	a.Set(c.Now())
	waitReturns(t, a, "set at the clock's time")
	a.Set(c.Now().Add(time.Second))
	done := make(chan struct{})
	go func() {
		a.Wait()
		close(done)
	}()
	c.Step(999 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("went off a millisecond early")
	case <-time.After(10 * time.Millisecond):
	}
	c.Step(time.Millisecond)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("did not go off at its time")
	}
}

func TestCloseEndsAWait(t *testing.T) {
	a, err := Open("test", nil)
	if err != nil {
		t.Skipf("no timer files: %v", err)
	}
	a.Set(time.Now().Add(time.Hour))
	done := make(chan struct{})
	go func() {
		a.Wait()
		close(done)
	}()
	a.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not end the wait")
	}
}

func TestNewUsesTheClock(t *testing.T) {
	_, err := Open("test", nil)
	for _, c := range []clock.Clock{clock.RealClock{}, &clock.RealClock{}} {
		a := New(c, "test", nil)
		_, goTimer := a.(*ClockAlarm)
		switch {
		case quietio.Off() && !goTimer:
			t.Fatalf("the real clock (%T) under --io=std got %T, want a Go timer", c, a)
		case !quietio.Off() && goTimer && err == nil:
			t.Fatalf("the real clock (%T) got a Go timer where a timer file works", c)
		}
		a.Close()
	}
	fake := New(clocktesting.NewFakeClock(time.Now()), "test", nil)
	if _, ok := fake.(*ClockAlarm); !ok {
		t.Fatalf("a fake clock got %T, want a timer of its own", fake)
	}
}
