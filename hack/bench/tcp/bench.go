//go:build linux

package main

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// probeTimeout is the probes' timeoutSeconds.
const probeTimeout = time.Second

// bench holds the two probers under comparison and the targets.
type bench struct {
	c       config
	pods    []pod
	dialer  *tcpprobe.Dialer
	sc      *ebpf.TCPProber
	targets []probe.TCPTarget // one per simulated probe
	want    []probe.Result
}

// mode is one way of answering probes.
type mode struct {
	name   string
	p      probe.TCPProber
	method probe.Method
}

// idle answers without doing anything: the simulation's baseline, the cost
// of the probe workers themselves (timers, scheduling).
type idle struct{}

// ProbeTCP returns at once.
func (idle) ProbeTCP(context.Context, probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	return probe.Unknown, "", "", nil
}

func newBench(c config, pods []pod) (*bench, error) {
	sc, err := ebpf.NewTCPProber(context.Background(), ebpf.ModeEBPF, ebpf.WithRegisterer(prometheus.NewRegistry()))
	if err != nil {
		return nil, fmt.Errorf("load the eBPF short-circuit: %w", err)
	}
	b := &bench{c: c, pods: pods, dialer: tcpprobe.NewDialer(), sc: sc}
	b.buildTargets()
	return b, nil
}

// buildTargets spreads the probes over every listener, round robin.
func (b *bench) buildTargets() {
	type port struct {
		pod  pod
		port int
		want probe.Result
	}
	var all []port
	for _, p := range b.pods {
		for _, n := range p.Ports {
			all = append(all, port{p, n, probe.Success})
		}
		for _, n := range p.Closed {
			all = append(all, port{p, n, probe.Failure})
		}
	}
	for i := range b.c.probes {
		x := all[i%len(all)]
		b.targets = append(b.targets, podTarget(x.pod, x.port))
		b.want = append(b.want, x.want)
	}
}

func podTarget(p pod, port int) probe.TCPTarget {
	return probe.TCPTarget{Host: p.PodIP.String(), Port: port, InPod: true, NetNSPath: p.Path, Timeout: probeTimeout}
}

// modes lists the dial first: the columns read "before, after".
func (b *bench) modes() []mode {
	return []mode{
		{"kubelet dial", b.dialer, probe.MethodDial},
		{"eBPF short-circuit", b.sc, probe.MethodEBPF},
	}
}

// mismatches probes every target both ways and counts differing answers.
func (b *bench) mismatches() (n int, viaEBPF int, err error) {
	ctx := context.Background()
	for _, t := range b.targets {
		res, out, method, err := b.sc.ProbeTCP(ctx, t)
		if err != nil {
			return 0, 0, err
		}
		dres, dout, _, err := b.dialer.ProbeTCP(ctx, t)
		if err != nil {
			return 0, 0, err
		}
		if res != dres || out != dout {
			n++
		}
		if method == probe.MethodEBPF {
			viaEBPF++
		}
	}
	return n, viaEBPF, nil
}

func (b *bench) close() { b.sc.Close() }

func addrPort(t probe.TCPTarget) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(t.Host), uint16(t.Port))
}
