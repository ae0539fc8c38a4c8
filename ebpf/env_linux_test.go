package ebpf_test

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/ebpf/tracker"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// probeTimeout is long enough for a veth round trip and short enough that
// the full-queue cases (where the dial times out) stay quick.
const probeTimeout = 500 * time.Millisecond

// env is one pod-like namespace, a short-circuit prober and the kubelet
// dialer it must agree with.
type env struct {
	t      *testing.T
	ns     *ebpftest.NetNS
	p      *ebpf.TCPProber
	reg    *prometheus.Registry
	dialer *tcpprobe.Dialer
}

func newNetNS(t testing.TB, id int) *ebpftest.NetNS {
	t.Helper()
	ebpftest.RequireRoot(t)
	ns, err := ebpftest.NewNetNS(id)
	if err != nil {
		t.Fatalf("NewNetNS: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// featureSets are the paths every kernel case covers: the optional
// capabilities the running kernel offers, and the fallbacks the oldest
// supported kernels (5.10) take.
var featureSets = []struct {
	name string
	f    tracker.Features
}{
	{"kernel", tracker.AllFeatures},
	{"fallbacks", tracker.NoFeatures},
}

// eachFeatureSet runs test once per feature set, as subtests.
func eachFeatureSet(t *testing.T, test func(t *testing.T, fs ebpf.Option)) {
	for _, s := range featureSets {
		t.Run(s.name, func(t *testing.T) { test(t, ebpf.WithKernelFeatures(s.f)) })
	}
}

// newEnv loads the short-circuit (ModeEBPF: it must load) for namespace ns.
func newEnv(t *testing.T, ns *ebpftest.NetNS, opts ...ebpf.Option) *env {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts = append([]ebpf.Option{ebpf.WithRegisterer(reg)}, opts...)
	p, err := ebpf.NewTCPProber(context.Background(), ebpf.ModeEBPF, opts...)
	if err != nil {
		t.Fatalf("NewTCPProber(ebpf): %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &env{t: t, ns: ns, p: p, reg: reg, dialer: tcpprobe.NewDialer()}
}

func (e *env) listen(c ebpftest.ListenConfig) *ebpftest.Listener {
	e.t.Helper()
	l, err := e.ns.Listen(c)
	if err != nil {
		e.t.Fatalf("listen %+v: %v", c, err)
	}
	e.t.Cleanup(func() { l.Close() })
	return l
}

func (e *env) target(dst netip.Addr, port int) probe.TCPTarget {
	return probe.TCPTarget{Host: dst.String(), Port: port, InPod: true, NetNSPath: e.ns.Path, Timeout: probeTimeout}
}

// check probes target through the short-circuit, then dials it, and
// requires the same result and output from both, the wanted result, and
// the wanted method for the short-circuit.
func (e *env) check(target probe.TCPTarget, want probe.Result, wantMethod probe.Method) {
	e.t.Helper()
	ctx := context.Background()
	if err := e.p.Sync(ctx); err != nil {
		e.t.Fatalf("Sync: %v", err)
	}
	res, out, method, err := e.p.ProbeTCP(ctx, target)
	if err != nil {
		e.t.Fatalf("short-circuit error: %v", err)
	}
	dres, dout, _, derr := e.dialer.ProbeTCP(ctx, target)
	if derr != nil {
		e.t.Fatalf("dial error: %v", derr)
	}
	if res != dres || out != dout {
		e.t.Errorf("%s:%d short-circuit (%s, %q) != dial (%s, %q)", target.Host, target.Port, res, out, dres, dout)
	}
	if res != want || method != wantMethod {
		e.t.Errorf("%s:%d = (%s via %s), want (%s via %s)", target.Host, target.Port, res, method, want, wantMethod)
	}
	// An answer from memory alone, when there is one, is the same; where
	// only a dial can tell, there is none.
	ires, iout, imethod, ok := e.p.ProbeTCPInstant(target)
	switch {
	case ok && (ires != res || iout != out || imethod != viaEBPF):
		e.t.Errorf("%s:%d from memory = (%s, %q via %s), want (%s, %q via ebpf)", target.Host, target.Port, ires, iout, imethod, res, out)
	case ok && method == viaDial:
		e.t.Errorf("%s:%d answered from memory, but only a dial can tell", target.Host, target.Port)
	}
}

// fill completes n connections to port that nobody accepts; they stay in
// the accept queue until the test ends.
func (e *env) fill(dst netip.Addr, port, n int) {
	e.t.Helper()
	for range n {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(dst.String(), strconv.Itoa(port)), time.Second)
		if err != nil {
			e.t.Fatalf("fill accept queue: %v", err)
		}
		e.t.Cleanup(func() { c.Close() })
	}
}
