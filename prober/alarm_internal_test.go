package prober

import (
	"context"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/quietio"
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
	if a, err := newTimerfdAlarm(nil); err == nil {
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
			goesOffAndFires(t, a)
		})
	}
}

// goesOffAndFires runs a real-clock alarm through its contract.
func goesOffAndFires(t *testing.T, a alarm) {
	t.Helper()
	a.set(time.Now().Add(time.Millisecond))
	waitReturns(t, a, "set")
	a.set(time.Now().Add(-time.Second))
	waitReturns(t, a, "set in the past")
	a.fire()
	waitReturns(t, a, "fired before the wait")
	a.set(time.Now().Add(time.Hour))
	a.fire()
	waitReturns(t, a, "fired after a set")
	a.disarm()
	a.fire()
	waitReturns(t, a, "fired after a disarm")
	a.set(time.Now().Add(time.Hour))
	endsAWait(t, a, a.fire, "a fire")
}

// endsAWait fails unless do ends a wait on a that is in progress.
func endsAWait(t *testing.T, a alarm, do func(), what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		a.wait()
		close(done)
	}()
	do() // before or after the wait parks: it must end either way
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not end a wait in progress", what)
	}
}

// TestTimerfdAlarmFallsBackToAGoTimer: a timer file the kernel refuses a
// setting on (here an invalid value, a negative time) hands over to a Go
// timer: the wait in progress ends, the error is reported once, and the
// alarm keeps its whole contract.
func TestTimerfdAlarmFallsBackToAGoTimer(t *testing.T) {
	var errs []error
	a, err := newTimerfdAlarm(func(err error) { errs = append(errs, err) })
	if err != nil {
		t.Skipf("no timer files: %v", err)
	}
	defer a.close()
	refused := a.settime(-time.Second)
	if refused == nil {
		t.Fatal("the kernel took a negative timer setting")
	}
	a.set(time.Now().Add(time.Hour))
	// As set, disarm and fire do: fall back, then replay the call.
	endsAWait(t, a, func() { a.fallBack(refused).fire() }, "falling back")
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
	a := newClockAlarm(c)
	defer a.close()
	a.set(c.Now())
	waitReturns(t, a, "set at the clock's time")
	a.set(c.Now().Add(time.Second))
	done := make(chan struct{})
	go func() {
		a.wait()
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

func TestTimerfdAlarmCloseEndsAWait(t *testing.T) {
	a, err := newTimerfdAlarm(nil)
	if err != nil {
		t.Skipf("no timer files: %v", err)
	}
	a.set(time.Now().Add(time.Hour))
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
	_, err := newTimerfdAlarm(nil)
	for _, c := range []clock.Clock{clock.RealClock{}, &clock.RealClock{}} {
		a := newAlarm(c, nil)
		_, goTimer := a.(*clockAlarm)
		switch {
		case quietio.Off() && !goTimer:
			t.Fatalf("the real clock (%T) under --io=std got %T, want a Go timer", c, a)
		case !quietio.Off() && goTimer && err == nil:
			t.Fatalf("the real clock (%T) got a Go timer where a timer file works", c)
		}
		a.close()
	}
	fake := newAlarm(clocktesting.NewFakeClock(time.Now()), nil)
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
		a, err := newTimerfdAlarm(nil)
		if err != nil {
			b.Skipf("no timer files: %v", err)
		}
		benchAlarm(b, a, interval)
	})
	b.Run("engine-round", func(b *testing.B) { benchRound(b, interval) })
}

func benchAlarm(b *testing.B, a alarm, interval time.Duration) {
	defer a.close()
	cpu0 := processCPU()
	for b.Loop() {
		a.set(time.Now().Add(interval))
		a.wait()
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/wake-up")
}

// countedTCP answers every TCP probe from memory, as the eBPF table does,
// and closes reached on the probe numbered target.
type countedTCP struct {
	runs    atomic.Int64
	target  int64
	reached chan struct{}
}

func (c *countedTCP) ProbeTCP(context.Context, probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	return probe.Success, "", probe.MethodEBPF, nil
}

func (c *countedTCP) ProbeTCPInstant(probe.TCPTarget) (probe.Result, string, probe.Method, bool) {
	if c.runs.Add(1) == c.target {
		close(c.reached)
	}
	return probe.Success, "", probe.MethodEBPF, true
}

// benchRound is the whole engine on the same alarm, one probe answered
// from memory per wake-up (pods a second apart spread every interval):
// the round's own cost in an otherwise idle process is the difference
// from the timerfd case. Nothing else in the process wakes meanwhile.
func benchRound(b *testing.B, interval time.Duration) {
	n := int(time.Second / interval)
	tcp := &countedTCP{reached: make(chan struct{})}
	slot := 0
	m, err := NewManager(WithTCPProber(tcp), WithRegisterer(prometheus.NewRegistry()),
		WithJitter(func() float64 { slot++; return float64(slot%n) / float64(n) }))
	if err != nil {
		b.Fatal(err)
	}
	// Warm up for a period and a half, then count b.N probes.
	tcp.target = int64(n + n/2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for i := range n {
		m.UpdatePod(roundPod(i))
	}
	<-tcp.reached
	b.ResetTimer()
	cpu0 := processCPU()
	// The scheduling goroutine reads target only once it passed the old
	// one, after this store: the channel receive above orders them.
	tcp.reached = make(chan struct{})
	tcp.target = tcp.runs.Load() + int64(b.N)
	<-tcp.reached
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/wake-up")
}

func roundPod(i int) node.Pod {
	uid := "pod-" + strconv.Itoa(i)
	return node.Pod{
		UID: uid, Name: uid, Namespace: "ns", IPs: []string{"10.0.0.1"},
		Annotations: map[string]string{probespec.AnnotationProbes: `{"app": {"readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 1}}}`},
		Containers:  []node.Container{{ID: "c-" + uid, Name: "app", State: node.StateRunning, StartedAt: time.Now()}},
	}
}

// processCPU is the user and system time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
