package prober_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// Benchmark layout: every probe has a 1 s period and the probes are spread
// over benchSlots due times 10 ms apart, as start-up jitter and container
// start times spread them on a node; the fake clock advances one slot per
// step, so each step runs n/benchSlots probes.
const (
	benchSlots = 100
	benchSlot  = time.Second / benchSlots
)

// noopTCP answers every probe at once: the benchmarks measure the engine,
// not a handler's I/O.
type noopTCP struct{}

func (noopTCP) ProbeTCP(context.Context, probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	return probe.Success, "", probe.MethodEBPF, nil
}

// instantNoopTCP answers every probe from memory, as the eBPF table does once
// a namespace is confirmed.
type instantNoopTCP struct{ noopTCP }

func (instantNoopTCP) ProbeTCPInstant(probe.TCPTarget) (probe.Result, string, probe.Method, bool) {
	return probe.Success, "", probe.MethodEBPF, true
}

// BenchmarkEngine measures one probe cycle (dispatch, handler call, result
// recorded) with n probes: op = one probe cycle; B/probe is the memory
// (heap and goroutine stacks) the engine keeps per probe. model=heap is
// probelet's scheduler handing every probe to its runner pool;
// model=heap-instant the same with answers from memory (the eBPF table),
// given on the scheduling goroutine; model=goroutine-ticker is the
// kubelet's worker model (a goroutine and a ticker per probe) doing the
// same bookkeeping.
func BenchmarkEngine(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("probes=%d/model=heap", n), func(b *testing.B) { benchHeap(b, n, noopTCP{}) })
		b.Run(fmt.Sprintf("probes=%d/model=heap-instant", n), func(b *testing.B) { benchHeap(b, n, instantNoopTCP{}) })
		b.Run(fmt.Sprintf("probes=%d/model=goroutine-ticker", n), func(b *testing.B) { benchTicker(b, n) })
	}
}

func benchPods(n int) []node.Pod {
	pods := make([]node.Pod, n)
	for i := range pods {
		id := fmt.Sprintf("c%d", i)
		pods[i] = testPod(id, probespec.ContainerProbes{Readiness: tcpProbe(readyPort, withPeriod(1))})
		pods[i].UID, pods[i].Name = "uid-"+id, "pod-"+id
	}
	return pods
}

// slotJitter spreads successive workers over the slots.
func slotJitter() func() float64 {
	i := 0
	return func() float64 {
		i++
		return float64(i%benchSlots) / benchSlots
	}
}

func benchHeap(b *testing.B, n int, tcp probe.TCPProber) {
	pods := benchPods(n)
	fc := clocktesting.NewFakeClock(epoch)
	ctx := context.Background()
	before := retained()
	m, err := prober.NewManager(prober.WithClock(fc), prober.WithTCPProber(tcp),
		prober.WithRegisterer(prometheus.NewRegistry()), prober.WithJitter(slotJitter()))
	if err != nil {
		b.Fatal(err)
	}
	defer run(b, m)()
	for _, p := range pods {
		m.UpdatePod(p)
	}
	step := func() {
		fc.Step(benchSlot)
		if err := m.WaitIdle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for range benchSlots * 11 { // first probes, then fill the histories
		step()
	}
	perProbe := float64(retained()-before) / float64(n)
	measureCycles(b, n/benchSlots, step)
	b.ReportMetric(perProbe, "B/probe")
	runtime.KeepAlive(pods)
}

// benchTicker is the kubelet's model: per probe a goroutine with a ticker
// that probes and records on every tick.
func benchTicker(b *testing.B, n int) {
	fc := clocktesting.NewFakeClock(epoch)
	before := retained()
	bk := newBookkeeping()
	var ticked, exited sync.WaitGroup
	stop := make(chan struct{})
	per := n / benchSlots
	for slot := range benchSlots {
		ticked.Add(per) // each new worker probes at once
		for i := range per {
			exited.Add(1)
			go tickerWorker(fc, bk.worker(fmt.Sprintf("c%d-%d", slot, i)), &ticked, &exited, stop)
		}
		ticked.Wait()
		if slot == benchSlots-1 {
			ticked.Add(per) // the first slot's tickers fire on this step
		}
		fc.Step(benchSlot)
		ticked.Wait()
	}
	step := func() {
		ticked.Add(per)
		fc.Step(benchSlot)
		ticked.Wait()
	}
	for range benchSlots * 10 {
		step()
	}
	perProbe := float64(retained()-before) / float64(n)
	measureCycles(b, per, step)
	b.ReportMetric(perProbe, "B/probe")
	close(stop)
	exited.Wait()
}

// bookkeeping is what the engine records per run, for the baseline: the
// results cache, the probe counter and histogram, a 10-run history.
type bookkeeping struct {
	cache    *results.Cache
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newBookkeeping() *bookkeeping {
	return &bookkeeping{
		cache:    results.NewCache(),
		total:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t"}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "d"}, []string{"probe_type", "container", "pod", "namespace"}),
	}
}

// tickerState is one baseline worker's state.
type tickerState struct {
	bk       *bookkeeping
	key      results.Key
	counter  prometheus.Counter
	duration prometheus.Observer
	history  [10]prober.ProbeRecord
	next     int
}

func (bk *bookkeeping) worker(id string) *tickerState {
	return &tickerState{
		bk: bk, key: results.Key{ContainerID: id, Type: probespec.Readiness},
		counter:  bk.total.WithLabelValues("Readiness", "successful", "app", "pod-"+id, "default", "uid-"+id),
		duration: bk.duration.WithLabelValues("Readiness", "app", "pod-"+id, "default"),
	}
}

func (s *tickerState) cycle(c clock.PassiveClock) {
	start := c.Now()
	res, out, method, _ := noopTCP{}.ProbeTCP(context.Background(), probe.TCPTarget{})
	d := c.Since(start)
	s.counter.Inc()
	s.duration.Observe(d.Seconds())
	s.history[s.next] = prober.ProbeRecord{Time: start, Duration: d, Output: out, Method: method}
	s.next = (s.next + 1) % len(s.history)
	if res == probe.Success {
		s.bk.cache.Set(s.key, results.Success)
	}
}

func tickerWorker(c clock.WithTicker, s *tickerState, ticked, exited *sync.WaitGroup, stop chan struct{}) {
	defer exited.Done()
	t := c.NewTicker(time.Second)
	defer t.Stop()
	s.cycle(c)
	ticked.Done()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
			s.cycle(c)
			ticked.Done()
		}
	}
}

// measureCycles runs step (perStep probe cycles each) until b.N cycles are
// done and reports time (as ns/op), allocations and bytes allocated per cycle.
func measureCycles(b *testing.B, perStep int, step func()) {
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	cycles := 0
	for cycles < b.N {
		step()
		cycles += perStep
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(cycles), "ns/op")
	// CPU time, unlike wall time, does not count waiting for a core the
	// rest of the machine is using.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(cycles), "cpu-ns/cycle")
	// Fractions matter here (allocations per step spread over its probes),
	// so these are reported unrounded, unlike -benchmem's allocs/op.
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(cycles), "allocs/cycle")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(cycles), "B/cycle")
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// retained is the live heap plus goroutine stacks after a GC.
func retained() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse
}
