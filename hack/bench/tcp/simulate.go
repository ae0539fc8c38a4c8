//go:build linux

package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/ebpf/sockdiag"
	"github.com/probelet/probelet/prober/probe"
)

// simResult is one mode's node simulation.
type simResult struct {
	mode        string
	probes      int64 // answered in the window
	wrong       int64 // answers other than the listener's expected result
	cpuPercent  float64
	socketsLeft int
}

// simulation is the baseline and both modes, plus the agreement check.
type simulation struct {
	baseline   simResult
	modes      []simResult
	mismatches int
	compared   int
	viaEBPF    int
}

// simulate runs every probe on its own period in each mode, measures the
// process's CPU over the window, then compares both modes target by target.
// The short-circuit runs before the dial, whose TIME_WAIT sockets would
// otherwise be expiring while the short-circuit's are counted.
func (b *bench) simulate() (simulation, error) {
	var s simulation
	var err error
	if s.baseline, err = b.simulateMode(mode{name: "workers only", p: idle{}}); err != nil {
		return s, err
	}
	ms := b.modes()
	s.modes = make([]simResult, len(ms))
	for i := len(ms) - 1; i >= 0; i-- {
		if s.modes[i], err = b.simulateMode(ms[i]); err != nil {
			return s, err
		}
	}
	s.mismatches, s.viaEBPF, err = b.mismatches()
	s.compared = len(b.targets)
	return s, err
}

func (b *bench) simulateMode(m mode) (simResult, error) {
	before, err := b.socketsToPods()
	if err != nil {
		return simResult{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var counting atomic.Bool
	r := simResult{mode: m.name}
	for i, t := range b.targets {
		offset := time.Duration(i) * b.c.period / time.Duration(len(b.targets))
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.worker(ctx, m.p, t, b.want[i], offset, &counting, &r)
		}()
	}
	time.Sleep(b.c.period) // every worker has started
	cpu0, t0 := cpuTime(), time.Now()
	counting.Store(true)
	time.Sleep(b.c.window)
	counting.Store(false)
	cpu1, t1 := cpuTime(), time.Now()
	cancel()
	wg.Wait()
	r.cpuPercent = 100 * float64(cpu1-cpu0) / float64(t1.Sub(t0))
	time.Sleep(settle)
	after, err := b.socketsToPods()
	r.socketsLeft = after - before
	return r, err
}

// worker is one probe: first run at offset, then every period, like a
// kubelet probe worker.
func (b *bench) worker(ctx context.Context, p probe.TCPProber, t probe.TCPTarget, want probe.Result, offset time.Duration, counting *atomic.Bool, r *simResult) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(offset):
	}
	tk := time.NewTicker(b.c.period)
	defer tk.Stop()
	for {
		res, _, _, _ := p.ProbeTCP(ctx, t)
		if counting.Load() {
			atomic.AddInt64(&r.probes, 1)
			if res != want && res != probe.Unknown {
				atomic.AddInt64(&r.wrong, 1)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// socketsToPods counts non-listening TCP sockets of connections between
// the host and the simulated listeners, on both sides.
func (b *bench) socketsToPods() (int, error) {
	ips := map[string]bool{}
	for _, p := range b.pods {
		ips[p.PodIP.String()] = true
	}
	bench := uint16(b.pods[0].Bench)
	const allButListen = 0xfff &^ (1 << sockdiag.StateListen)
	count, err := countSockets("", allButListen, func(s sockdiag.Socket) bool {
		return ips[s.Peer.Addr().String()] && s.Peer.Port() != bench
	})
	if err != nil {
		return 0, err
	}
	for _, p := range b.pods {
		n, err := countSockets(p.Path, allButListen, func(s sockdiag.Socket) bool { return s.Port != bench })
		if err != nil {
			return 0, err
		}
		count += n
	}
	return count, nil
}

func countSockets(nsPath string, states uint32, match func(sockdiag.Socket) bool) (int, error) {
	var c *sockdiag.Conn
	var err error
	if nsPath == "" {
		c, err = sockdiag.Open()
	} else {
		c, err = sockdiag.OpenIn(nsPath)
	}
	if err != nil {
		return 0, err
	}
	defer c.Close()
	socks, err := c.TCP(states)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range socks {
		if match(s) {
			n++
		}
	}
	return n, nil
}
