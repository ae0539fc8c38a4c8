//go:build linux

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/prober/probe"
)

// settle lets the last connections' FIN exchange finish before counting.
const settle = 200 * time.Millisecond

// probeCost is one mode's cost per probe.
type probeCost struct {
	mode        string
	nsPerOp     int64
	allocsPerOp int64
	socketsLeft int // after config.dials probes
}

// perProbe measures both modes on one reachable target that the
// simulation does not use, so its leftover sockets are counted apart.
func (b *bench) perProbe() ([]probeCost, error) {
	p := b.pods[0]
	target := podTarget(p, p.Bench)
	ns := &ebpftest.NetNS{Path: p.Path, PodIP: p.PodIP}
	var out []probeCost
	for _, m := range b.modes() {
		left, err := b.socketsAfter(ns, m, target)
		if err != nil {
			return nil, err
		}
		r, err := benchmark(m, target)
		if err != nil {
			return nil, err
		}
		out = append(out, probeCost{m.name, r.NsPerOp(), r.AllocsPerOp(), left})
	}
	return out, nil
}

// socketsAfter runs config.dials probes and counts the sockets they left.
func (b *bench) socketsAfter(ns *ebpftest.NetNS, m mode, target probe.TCPTarget) (int, error) {
	before, err := ns.SocketsLeft(addrPort(target))
	if err != nil {
		return 0, err
	}
	for range b.c.dials {
		if res, out, _, err := m.p.ProbeTCP(context.Background(), target); res != probe.Success || err != nil {
			return 0, fmt.Errorf("%s: (%s, %q, %v)", m.name, res, out, err)
		}
	}
	time.Sleep(settle)
	after, err := ns.SocketsLeft(addrPort(target))
	return after - before, err
}

func benchmark(m mode, target probe.TCPTarget) (testing.BenchmarkResult, error) {
	var failed error
	r := testing.Benchmark(func(tb *testing.B) {
		tb.ReportAllocs()
		for tb.Loop() {
			res, out, method, err := m.p.ProbeTCP(context.Background(), target)
			if res != probe.Success || method != m.method || err != nil {
				failed = fmt.Errorf("%s: (%s, %q, %s, %v)", m.name, res, out, method, err)
				tb.FailNow()
			}
		}
	})
	return r, failed
}
