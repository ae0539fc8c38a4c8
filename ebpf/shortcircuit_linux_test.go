package ebpf_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/prober/probe"
)

var (
	any4     = netip.IPv4Unspecified()
	any6     = netip.IPv6Unspecified()
	loopback = netip.MustParseAddr("127.0.0.1")
)

const (
	viaEBPF = probe.MethodEBPF
	viaDial = probe.MethodDial
	success = probe.Success
	failure = probe.Failure
)

// TestAnswersEqualDial runs each listener shape in a real namespace and
// compares the short-circuit with a kubelet-style dial to the pod IPs.
func TestAnswersEqualDial(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs ebpf.Option) {
		ns := newNetNS(t, 1)
		e := newEnv(t, ns, fs)
		v4, v6 := ns.PodIP, ns.PodIP6
		mapped := netip.AddrFrom16(v4.As16())
		tests := []struct {
			name   string
			cfg    ebpftest.ListenConfig
			dst    netip.Addr
			want   probe.Result
			method probe.Method
		}{
			{"0.0.0.0", ebpftest.ListenConfig{Addr: any4}, v4, success, viaEBPF},
			{"127.0.0.1 only", ebpftest.ListenConfig{Addr: loopback}, v4, failure, viaEBPF},
			{"pod IP", ebpftest.ListenConfig{Addr: v4}, v4, success, viaEBPF},
			{":: for IPv4", ebpftest.ListenConfig{Addr: any6}, v4, success, viaEBPF},
			{":: for IPv6", ebpftest.ListenConfig{Addr: any6}, v6, success, viaEBPF},
			{":: v6only for IPv4", ebpftest.ListenConfig{Addr: any6, V6Only: true}, v4, failure, viaEBPF},
			{":: v6only for IPv6", ebpftest.ListenConfig{Addr: any6, V6Only: true}, v6, success, viaEBPF},
			{"v4-mapped pod IP", ebpftest.ListenConfig{Addr: mapped}, v4, success, viaEBPF},
			{"0.0.0.0 for IPv6", ebpftest.ListenConfig{Addr: any4}, v6, failure, viaEBPF},
			{"listen without bind", ebpftest.ListenConfig{NoBind: true}, v4, success, viaEBPF},
			{"bound to a device", ebpftest.ListenConfig{Addr: any4, Device: "eth0"}, v4, success, viaDial},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				e.t = t
				l := e.listen(tc.cfg)
				e.check(e.target(tc.dst, l.Port), tc.want, tc.method)
			})
		}
	})
}

// TestInstantAnswersFromMemoryOnly: ProbeTCPInstant answers once the
// namespace is confirmed, and never where ProbeTCP must wait for sock_diag
// or a dial.
func TestInstantAnswersFromMemoryOnly(t *testing.T) {
	ns := newNetNS(t, 9)
	e := newEnv(t, ns)
	l := e.listen(ebpftest.ListenConfig{Addr: any4})
	target := e.target(ns.PodIP, l.Port)
	if err := e.p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := e.p.ProbeTCPInstant(target); ok {
		t.Fatal("answered from memory for a namespace never confirmed (that takes sock_diag)")
	}
	e.check(target, success, viaEBPF) // confirms the namespace
	if res, _, method, ok := e.p.ProbeTCPInstant(target); !ok || res != success || method != viaEBPF {
		t.Fatalf("from memory after confirming = (%s via %s, %v), want success via ebpf", res, method, ok)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	e.check(target, failure, viaEBPF) // compares the refusal's words with a dial's
	if res, _, _, ok := e.p.ProbeTCPInstant(target); !ok || res != failure {
		t.Fatalf("from memory after close = (%s, %v), want failure", res, ok)
	}

	verify := newEnv(t, ns, ebpf.WithVerify(true))
	verify.check(target, failure, viaDial)
	if _, _, _, ok := verify.p.ProbeTCPInstant(target); ok {
		t.Fatal("answered from memory in verify mode (every answer is checked with a dial)")
	}
}

func TestCloseAndShutdown(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs ebpf.Option) {
		ns := newNetNS(t, 2)
		e := newEnv(t, ns, fs)
		for _, stop := range []struct {
			name string
			do   func(*ebpftest.Listener) error
		}{
			{"close", (*ebpftest.Listener).Close},
			{"shutdown", (*ebpftest.Listener).Shutdown},
		} {
			t.Run(stop.name, func(t *testing.T) {
				e.t = t
				l := e.listen(ebpftest.ListenConfig{Addr: any4})
				target := e.target(ns.PodIP, l.Port)
				e.check(target, success, viaEBPF)
				if err := stop.do(l); err != nil {
					t.Fatal(err)
				}
				e.check(target, failure, viaEBPF)
			})
		}
	})
}

func TestReusePortPair(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs ebpf.Option) {
		ns := newNetNS(t, 3)
		e := newEnv(t, ns, fs)
		a := e.listen(ebpftest.ListenConfig{Addr: any4, ReusePort: true})
		b := e.listen(ebpftest.ListenConfig{Addr: any4, Port: a.Port, ReusePort: true})
		target := e.target(ns.PodIP, a.Port)
		e.check(target, success, viaEBPF)
		a.Close()
		e.check(target, success, viaEBPF)
		b.Close()
		e.check(target, failure, viaEBPF)
	})
}

func TestFullAcceptQueue(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs ebpf.Option) {
		ns := newNetNS(t, 4)
		e := newEnv(t, ns, fs)
		l := e.listen(ebpftest.ListenConfig{Addr: any4, Backlog: 1})
		target := e.target(ns.PodIP, l.Port)
		e.check(target, success, viaEBPF) // the dial leaves one connection queued
		e.fill(ns.PodIP, l.Port, 1)       // backlog 1 holds two: now full
		e.check(target, failure, viaEBPF)
		for range 2 {
			if err := l.Accept(); err != nil {
				t.Fatal(err)
			}
		}
		e.check(target, success, viaEBPF)
	})
}

func TestListenersFromBeforeLoad(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs ebpf.Option) {
		ns := newNetNS(t, 5)
		before := map[string]*ebpftest.Listener{}
		for name, c := range map[string]ebpftest.ListenConfig{
			"0.0.0.0":   {Addr: any4},
			"127.0.0.1": {Addr: loopback},
			"v6only":    {Addr: any6, V6Only: true},
		} {
			l, err := ns.Listen(c)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			before[name] = l
		}
		e := newEnv(t, ns, fs)
		e.check(e.target(ns.PodIP, before["0.0.0.0"].Port), success, viaEBPF)
		e.check(e.target(ns.PodIP, before["127.0.0.1"].Port), failure, viaEBPF)
		e.check(e.target(ns.PodIP, before["v6only"].Port), failure, viaEBPF)
		e.check(e.target(ns.PodIP6, before["v6only"].Port), success, viaEBPF)
	})
}

func TestDeletedNamespaceDials(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs ebpf.Option) {
		ns := newNetNS(t, 6)
		e := newEnv(t, ns, fs)
		l, err := ns.Listen(ebpftest.ListenConfig{Addr: any4})
		if err != nil {
			t.Fatal(err)
		}
		target := e.target(ns.PodIP, l.Port)
		e.check(target, success, viaEBPF)
		l.Close()
		if err := ns.Close(); err != nil {
			t.Fatal(err)
		}
		e.check(target, failure, viaDial)
	})
}

func TestTargetsOutsideThePodDial(t *testing.T) {
	ns := newNetNS(t, 7)
	e := newEnv(t, ns)
	l := e.listen(ebpftest.ListenConfig{Addr: any4})
	notInPod := e.target(ns.PodIP, l.Port)
	notInPod.InPod = false
	e.check(notInPod, success, viaDial)
	noNetNS := e.target(ns.PodIP, l.Port)
	noNetNS.NetNSPath = ""
	e.check(noNetNS, success, viaDial)
	if got := testutil.Metric(t, e.reg, "probelet_tcp_shortcircuit_fallback_total", map[string]string{"reason": "not-in-pod"}); got != 1 {
		t.Errorf("fallback{reason=not-in-pod} = %v, want 1", got)
	}
}

func TestVerifyModeCountsNoMismatchOnAgreement(t *testing.T) {
	ns := newNetNS(t, 8)
	e := newEnv(t, ns, ebpf.WithVerify(true))
	open := e.listen(ebpftest.ListenConfig{Addr: any4})
	local := e.listen(ebpftest.ListenConfig{Addr: loopback})
	e.check(e.target(ns.PodIP, open.Port), success, viaDial)
	e.check(e.target(ns.PodIP, local.Port), failure, viaDial)
	if got := testutil.Metric(t, e.reg, "probelet_tcp_shortcircuit_mismatch_total", nil); got != 0 {
		t.Errorf("mismatches = %v, want 0", got)
	}
}

func TestVerifyModeCountsAndReturnsTheDialOnDisagreement(t *testing.T) {
	ns := newNetNS(t, 13)
	liar := &fakeDialer{res: failure, out: "dial tcp: lies"}
	e := newEnv(t, ns, ebpf.WithVerify(true), ebpf.WithFallback(liar))
	l := e.listen(ebpftest.ListenConfig{Addr: any4})
	if err := e.p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, out, method, err := e.p.ProbeTCP(context.Background(), e.target(ns.PodIP, l.Port))
	if err != nil || res != liar.res || out != liar.out || method != viaDial {
		t.Fatalf("ProbeTCP = (%s, %q, %s, %v), want the dial's answer", res, out, method, err)
	}
	if got := testutil.Metric(t, e.reg, "probelet_tcp_shortcircuit_mismatch_total", nil); got != 1 {
		t.Errorf("mismatches = %v, want 1", got)
	}
}

// listenThenDial is a dial during which the app begins to listen: the
// first probe of a container just started.
type listenThenDial struct {
	e      *env
	dialer probe.TCPProber
}

func (d *listenThenDial) ProbeTCP(ctx context.Context, target probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	d.e.listen(ebpftest.ListenConfig{Addr: any4, Port: target.Port})
	return d.dialer.ProbeTCP(ctx, target)
}

// TestVerifyModeCountsNoMismatchWhenTheAppChangesDuringTheDial: the table
// said refused, the app then listened and the dial got through. Both looks
// were right at their moment; only an answer the caught-up table still
// gives differently is a disagreement.
func TestVerifyModeCountsNoMismatchWhenTheAppChangesDuringTheDial(t *testing.T) {
	ns := newNetNS(t, 14)
	d := &listenThenDial{}
	e := newEnv(t, ns, ebpf.WithVerify(true), ebpf.WithFallback(d))
	d.e, d.dialer = e, e.dialer
	l := e.listen(ebpftest.ListenConfig{Addr: any4})
	port := l.Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, _, method, err := e.p.ProbeTCP(context.Background(), e.target(ns.PodIP, port))
	if err != nil || res != success || method != viaDial {
		t.Fatalf("ProbeTCP = (%s via %s, %v), want the dial's success", res, method, err)
	}
	if got := testutil.Metric(t, e.reg, "probelet_tcp_shortcircuit_mismatch_total", nil); got != 0 {
		t.Errorf("mismatches = %v, want 0: the app only began listening during the dial", got)
	}
}
