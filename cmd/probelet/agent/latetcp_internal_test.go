package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// instantProber answers every probe from memory, and counts its Close.
type instantProber struct{ closed int }

func (p *instantProber) ProbeTCP(context.Context, probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	return probe.Success, "dialed", probe.MethodDial, nil
}

func (p *instantProber) ProbeTCPInstant(probe.TCPTarget) (probe.Result, string, probe.Method, bool) {
	return probe.Success, "from memory", probe.MethodEBPF, true
}

func (p *instantProber) Close() error { p.closed++; return nil }

func TestLateTCPDeclinesUntilLoaded(t *testing.T) {
	release := make(chan struct{})
	inner := &instantProber{}
	l := loadTCP("ebpf", func() (probe.TCPProber, error) { <-release; return inner, nil })
	if _, _, _, ok := l.ProbeTCPInstant(probe.TCPTarget{}); ok {
		t.Fatal("answered from memory before the prober loaded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, _, _, err := l.ProbeTCP(ctx, probe.TCPTarget{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ProbeTCP before the load = %v, want it to wait until its context ends", err)
	}
	close(release)
	if err := l.wait(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, out, _, ok := l.ProbeTCPInstant(probe.TCPTarget{}); !ok || out != "from memory" {
		t.Errorf("ProbeTCPInstant once loaded = %q, %v; want the loaded prober's answer", out, ok)
	}
	if _, out, _, err := l.ProbeTCP(context.Background(), probe.TCPTarget{}); err != nil || out != "dialed" {
		t.Errorf("ProbeTCP once loaded = %q, %v; want the loaded prober's answer", out, err)
	}
	if err := l.Close(); err != nil || inner.closed != 1 {
		t.Errorf("Close = %v, inner closed %d times; want once", err, inner.closed)
	}
}

func TestLateTCPLoadOutcomes(t *testing.T) {
	loadErr := errors.New("load eBPF objects: permission denied")
	for _, tc := range []struct {
		name    string
		build   func() (probe.TCPProber, error)
		wantErr string
		dialer  bool
	}{
		{"error names the mode", func() (probe.TCPProber, error) { return nil, loadErr }, "--tcp-mode ebpf: load eBPF objects", false},
		{"nil prober is the kubelet's dialer", func() (probe.TCPProber, error) { return nil, nil }, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := loadTCP("ebpf", tc.build)
			err := l.wait(context.Background(), nil)
			if tc.wantErr != "" {
				if !errors.Is(err, loadErr) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("wait = %v, want %q wrapping the load error", err, tc.wantErr)
				}
				if _, _, _, err := l.ProbeTCP(context.Background(), probe.TCPTarget{}); !errors.Is(err, loadErr) {
					t.Errorf("ProbeTCP after a failed load = %v, want the load error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := l.p.(*tcpprobe.Dialer); ok != tc.dialer {
				t.Errorf("loaded %T, want the dialer: %v", l.p, tc.dialer)
			}
			if err := l.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
	}
}

func TestLateTCPWaitEndsOnFailureOrContext(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	l := loadTCP("auto", func() (probe.TCPProber, error) { <-never; return nil, nil })
	failed := make(chan error, 1)
	boom := errors.New("socket server: address in use")
	failed <- boom
	if err := l.wait(context.Background(), failed); !errors.Is(err, boom) {
		t.Errorf("wait with a failed component = %v, want that failure", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.wait(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("wait with its context ended = %v, want context.Canceled", err)
	}
}
