package ebpf_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/prober/probe"
)

func TestDialModeUsesTheFallback(t *testing.T) {
	reg := prometheus.NewRegistry()
	fake := &fakeDialer{res: probe.Failure, out: "dial tcp 10.0.0.5:80: connect: connection refused"}
	p, err := ebpf.NewTCPProber(context.Background(), ebpf.ModeDial, ebpf.WithFallback(fake), ebpf.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Mode() != ebpf.ModeDial {
		t.Fatalf("Mode = %s, want dial", p.Mode())
	}
	target := probe.TCPTarget{Host: "10.0.0.5", Port: 80, InPod: true, NetNSPath: "/proc/1/ns/net", Timeout: time.Second}
	res, out, method, err := p.ProbeTCP(context.Background(), target)
	if err != nil || res != fake.res || out != fake.out || method != probe.MethodDial {
		t.Fatalf("ProbeTCP = (%s, %q, %s, %v), want the fallback's answer", res, out, method, err)
	}
	if got := testutil.Metric(t, reg, "probelet_tcp_probes_total", map[string]string{"method": "dial"}); got != 1 {
		t.Errorf("probelet_tcp_probes_total{method=dial} = %v, want 1", got)
	}
	if got := testutil.Metric(t, reg, "probelet_tcp_mode", map[string]string{"mode": "dial"}); got != 1 {
		t.Errorf("probelet_tcp_mode{mode=dial} = %v, want 1", got)
	}
	if err := p.Sync(context.Background()); err != nil {
		t.Errorf("Sync in dial mode: %v", err)
	}
}

// Dialling, the prober begins probes as its dialer does (the engine's
// scheduling goroutine answers most of them at once) and counts them as
// ProbeTCP would; a target the dialer declines is counted by ProbeTCP.
func TestDialModeStartsProbesWithItsDialer(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := ebpf.NewTCPProber(context.Background(), ebpf.ModeDial, ebpf.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var _ probe.TCPStarter = p
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	res, out, method, pending, ok := p.StartTCP(probe.TCPTarget{Host: "127.0.0.1", Port: closed, Timeout: time.Second})
	if !ok || pending != nil || res != probe.Failure || method != probe.MethodDial || !strings.HasSuffix(out, "connect: connection refused") {
		t.Fatalf("StartTCP(closed port) = (%s, %q, %s, %v, %v), want the dial's refusal at once", res, out, method, pending, ok)
	}
	if _, _, _, pending, ok := p.StartTCP(probe.TCPTarget{Host: "localhost", Port: 80, Timeout: time.Second}); ok || pending != nil {
		t.Fatal("StartTCP began a dial of a host name, which only ProbeTCP resolves")
	}
	if got := testutil.Metric(t, reg, "probelet_tcp_probes_total", map[string]string{"method": "dial"}); got != 1 {
		t.Errorf("probelet_tcp_probes_total{method=dial} = %v, want 1 (the declined start is ProbeTCP's to count)", got)
	}
}

func TestCloseUnregistersMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		p, err := ebpf.NewTCPProber(context.Background(), ebpf.ModeDial, ebpf.WithRegisterer(reg))
		if err != nil {
			t.Fatalf("NewTCPProber with a registry used before: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNewTCPProberRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		mode ebpf.Mode
		opts []ebpf.Option
	}{
		{"unknown mode", "fast", nil},
		{"nil fallback", ebpf.ModeDial, []ebpf.Option{ebpf.WithFallback(nil)}},
		{"nil logger", ebpf.ModeDial, []ebpf.Option{ebpf.WithLogger(nil)}},
		{"nil registerer", ebpf.ModeDial, []ebpf.Option{ebpf.WithRegisterer(nil)}},
		{"zero interval", ebpf.ModeDial, []ebpf.Option{ebpf.WithReconcileInterval(0)}},
		{"nil clock", ebpf.ModeDial, []ebpf.Option{ebpf.WithClock(nil)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := ebpf.NewTCPProber(context.Background(), tc.mode, tc.opts...); err == nil {
				p.Close()
				t.Fatal("NewTCPProber succeeded")
			}
		})
	}
}

func TestMetricsClashIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := ebpf.NewTCPProber(context.Background(), ebpf.ModeDial, ebpf.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if b, err := ebpf.NewTCPProber(context.Background(), ebpf.ModeDial, ebpf.WithRegisterer(reg)); err == nil {
		b.Close()
		t.Fatal("two probers registered the same metrics")
	}
}

// TestNilProberCloses: NewTCPProber returns a nil prober with its error;
// cleanup code that closes whatever it got, often through an interface
// (io.Closer, probe.TCPProber), must not panic.
func TestNilProberCloses(t *testing.T) {
	var p *ebpf.TCPProber
	var c io.Closer = p
	if err := c.Close(); err != nil {
		t.Fatalf("Close of a nil prober = %v", err)
	}
}
