package ebpf_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// BenchmarkTCPProbe compares one kubelet-style dial with one short-circuit
// answer for the same pod target over a veth pair. sockets/op counts the
// sockets (TIME_WAIT, ...) each probe leaves behind on either side.
func BenchmarkTCPProbe(b *testing.B) {
	ns := newNetNS(b, 30)
	l, err := ns.Listen(ebpftest.ListenConfig{Addr: netip.IPv4Unspecified()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if err := l.Serve(); err != nil {
		b.Fatal(err)
	}
	sc, err := ebpf.NewTCPProber(context.Background(), ebpf.ModeEBPF, ebpf.WithRegisterer(prometheus.NewRegistry()))
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	target := probe.TCPTarget{Host: ns.PodIP.String(), Port: l.Port, InPod: true, NetNSPath: ns.Path, Timeout: time.Second}
	for _, bc := range []struct {
		name   string
		p      probe.TCPProber
		method probe.Method
	}{
		{"kubelet-dial", tcpprobe.NewDialer(), probe.MethodDial},
		{"short-circuit", sc, probe.MethodEBPF},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dst := netip.AddrPortFrom(ns.PodIP, uint16(l.Port))
			before, err := ns.SocketsLeft(dst)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, out, method, err := bc.p.ProbeTCP(context.Background(), target)
				if res != probe.Success || method != bc.method || err != nil {
					b.Fatalf("ProbeTCP = (%s, %q, %s, %v)", res, out, method, err)
				}
			}
			b.StopTimer()
			after, err := ns.SocketsLeft(dst)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(after-before)/float64(b.N), "sockets/op")
		})
	}
}
