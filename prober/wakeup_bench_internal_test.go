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

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/quietio/timerfile"
)

// BenchmarkAlarmWakeUp is one sleep and wake-up of the scheduler's alarm
// on the real clock, 20 ms apart (a node's probes are spread over their
// period, so the process is idle in between): cpu-µs/wake-up is the CPU
// the whole process spent per wake-up (every thread, kernel included), the
// cost a probe answered from memory pays on top of its answer.
// go-timer is a Go timer; timerfd the timer file the real clock uses.
func BenchmarkAlarmWakeUp(b *testing.B) {
	const interval = 20 * time.Millisecond
	b.Run("go-timer", func(b *testing.B) { benchAlarm(b, timerfile.NewClockAlarm(clock.RealClock{}), interval) })
	b.Run("timerfd", func(b *testing.B) {
		a, err := timerfile.Open("bench", nil)
		if err != nil {
			b.Skipf("no timer files: %v", err)
		}
		benchAlarm(b, a, interval)
	})
	b.Run("engine-round", func(b *testing.B) { benchRound(b, interval) })
}

func benchAlarm(b *testing.B, a timerfile.Alarm, interval time.Duration) {
	defer a.Close()
	cpu0 := processCPU()
	for b.Loop() {
		a.Set(time.Now().Add(interval))
		a.Wait()
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
