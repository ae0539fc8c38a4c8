package ebpf

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/ebpf/tracker"
	"github.com/probelet/probelet/prober/probe"
)

// DefaultReconcileInterval is how often the listeners of every probed
// namespace are compared with a sock_diag dump.
const DefaultReconcileInterval = 30 * time.Second

// Option configures a TCPProber.
type Option func(*TCPProber) error

// WithFallback sets the prober used when the short-circuit cannot decide or
// is off (default: the kubelet-style dialer, tcpprobe.NewDialer).
func WithFallback(p probe.TCPProber) Option {
	return func(t *TCPProber) error {
		if p == nil {
			return errors.New("ebpf: nil fallback prober")
		}
		t.fallback = p
		return nil
	}
}

// WithVerify runs the fallback dial after every short-circuit answer, counts
// disagreements in probelet_tcp_shortcircuit_mismatch_total, logs each one,
// and returns the dial's answer.
func WithVerify(on bool) Option {
	return func(t *TCPProber) error {
		t.verify = on
		return nil
	}
}

// WithLogger sets the logger (default: none).
func WithLogger(l *zap.Logger) Option {
	return func(t *TCPProber) error {
		if l == nil {
			return errors.New("ebpf: nil logger")
		}
		t.log = l
		return nil
	}
}

// WithRegisterer registers the prober's metrics with r (default: a private
// registry, i.e. not exported).
func WithRegisterer(r prometheus.Registerer) Option {
	return func(t *TCPProber) error {
		if r == nil {
			return errors.New("ebpf: nil registerer")
		}
		t.reg = r
		return nil
	}
}

// WithReconcileInterval sets how often probed namespaces are reconciled
// with sock_diag (default DefaultReconcileInterval).
func WithReconcileInterval(d time.Duration) Option {
	return func(t *TCPProber) error {
		if d <= 0 {
			return fmt.Errorf("ebpf: reconcile interval %v must be positive", d)
		}
		t.interval = d
		return nil
	}
}

// WithClock sets the clock of the reconcile loop (tests use a fake one).
func WithClock(c clock.WithTicker) Option {
	return func(t *TCPProber) error {
		if c == nil {
			return errors.New("ebpf: nil clock")
		}
		t.clock = c
		return nil
	}
}

// WithKernelFeatures limits the optional kernel capabilities the eBPF
// tracker may use (default tracker.AllFeatures, each used only where the
// kernel has it). tracker.NoFeatures takes the paths of the oldest
// supported kernels (Linux 5.10); answers are the same.
func WithKernelFeatures(f tracker.Features) Option {
	return func(t *TCPProber) error {
		if f&^tracker.AllFeatures != 0 {
			return fmt.Errorf("ebpf: unknown kernel features %#x", uint8(f&^tracker.AllFeatures))
		}
		t.features = f
		return nil
	}
}
