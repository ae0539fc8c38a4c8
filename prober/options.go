package prober

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/execprobe"
	"github.com/probelet/probelet/probespec"
)

// Option configures a Manager; it fails on a value the Manager cannot use.
type Option func(*Manager) error

// LivenessAction is what the engine does when a liveness or startup probe
// fails at its threshold.
type LivenessAction int

const (
	// ActionRestart kills the container through the ContainerKiller, like
	// the kubelet (its restart policy then restarts it).
	ActionRestart LivenessAction = iota
	// ActionReport only logs and emits a "would restart" event; for trying
	// probelet next to the kubelet without acting twice.
	ActionReport
)

// String returns "restart" or "report".
func (a LivenessAction) String() string {
	if a == ActionReport {
		return "report"
	}
	return "restart"
}

// WithClock sets the clock for scheduling and timestamps; tests pass a
// k8s.io/utils/clock/testing FakeClock.
func WithClock(c clock.Clock) Option {
	return func(m *Manager) error {
		if c == nil {
			return errors.New("prober: nil clock")
		}
		m.clock = c
		return nil
	}
}

// WithLogger sets the logger (default: no logging).
func WithLogger(l *zap.Logger) Option {
	return func(m *Manager) error {
		if l == nil {
			return errors.New("prober: nil logger")
		}
		m.log = l
		return nil
	}
}

// WithRegisterer registers the engine's metrics on r (default: a private
// registry, so several managers can coexist in tests).
func WithRegisterer(r prometheus.Registerer) Option {
	return func(m *Manager) error {
		if r == nil {
			return errors.New("prober: nil metrics registerer")
		}
		m.registerer = r
		return nil
	}
}

// WithTCPProber sets who answers TCP probes (default: the kubelet-style
// dialer; the eBPF listener table in production).
func WithTCPProber(p probe.TCPProber) Option {
	return func(m *Manager) error {
		if p == nil {
			return errors.New("prober: nil TCP prober")
		}
		m.handlers.tcp = p
		return nil
	}
}

// WithExecRunner sets the CRI ExecSync runner exec probes go through.
// Without one, exec probes error (and are discarded, like the kubelet's).
func WithExecRunner(r execprobe.Runner) Option {
	return func(m *Manager) error {
		if r == nil {
			return errors.New("prober: nil exec runner")
		}
		m.handlers.exec = execHandler(r)
		return nil
	}
}

// WithKiller sets who stops containers whose liveness or startup probe
// failed. Without one the engine only reports, as with ActionReport.
func WithKiller(k ContainerKiller) Option {
	return func(m *Manager) error {
		if k == nil {
			return errors.New("prober: nil container killer")
		}
		m.killer = k
		return nil
	}
}

// WithJitter sets the source of the random fraction of a period, in [0,1),
// that workers wait first when the agent started less than a period ago.
func WithJitter(f func() float64) Option {
	return func(m *Manager) error {
		if f == nil {
			return errors.New("prober: nil jitter source")
		}
		m.jitter = f
		return nil
	}
}

// WithConcurrency bounds how many probes run at once on the runner pool
// (default 64). A probe waiting on its target past a few milliseconds
// leaves the bound (see detachAfter): it delays nobody else.
func WithConcurrency(n int) Option {
	return func(m *Manager) error {
		if n < 1 {
			return fmt.Errorf("prober: concurrency %d, want at least 1", n)
		}
		m.concurrency = n
		return nil
	}
}

// WithHistory sets how many recent runs each probe keeps (default 10; 0
// keeps none).
func WithHistory(n int) Option {
	return func(m *Manager) error {
		if n < 0 {
			return fmt.Errorf("prober: history %d, want 0 or more", n)
		}
		m.historyLen = n
		return nil
	}
}

// WithLivenessAction chooses between restarting (default) and reporting
// on liveness and startup failures.
func WithLivenessAction(a LivenessAction) Option {
	return func(m *Manager) error {
		if a != ActionRestart && a != ActionReport {
			return fmt.Errorf("prober: unknown liveness action %d", a)
		}
		m.action = a
		return nil
	}
}

// WithAgentStartTime sets when the agent started (default: the clock's
// time in NewManager); it decides the start-up jitter and which running
// containers are not re-seeded after an agent restart.
func WithAgentStartTime(t time.Time) Option {
	return func(m *Manager) error {
		if t.IsZero() {
			return errors.New("prober: zero agent start time")
		}
		m.agentStart = t
		return nil
	}
}

// SpecParser turns a pod's probelet.io/probes annotation value into probe
// specs; *spec.Memo is the default. It must be safe for concurrent use and
// never panic.
type SpecParser interface {
	Parse(value string) *probespec.Parsed
}

// WithSpecParser replaces how probe annotations are parsed (tests hand the
// engine specs that skipped validation this way).
func WithSpecParser(p SpecParser) Option {
	return func(m *Manager) error {
		if p == nil {
			return errors.New("prober: nil spec parser")
		}
		m.specs = p
		return nil
	}
}

// RestartHistory keeps the restarts the engine issued beyond the engine's
// own life (probelet's state directory), so "restarts issued" survives a
// probelet restart. The engine calls it under its lock: it must not block.
type RestartHistory interface {
	// Restarts returns what was kept for a pod, per container name; the
	// engine restores it when it first sees the pod.
	Restarts(podUID string) map[string][]Restart
	// Save replaces what is kept for a pod (a copy the engine won't touch).
	Save(podUID string, byContainer map[string][]Restart)
}

// WithRestartHistory keeps restarts issued in h.
func WithRestartHistory(h RestartHistory) Option {
	return func(m *Manager) error {
		if h == nil {
			return errors.New("prober: nil restart history")
		}
		m.history = h
		return nil
	}
}

// WithProbeHostCIDRs lets probes name hosts in cidrs besides their pod's
// own IPs (--allow-probe-host): IP literals only, never hostnames.
func WithProbeHostCIDRs(cidrs ...netip.Prefix) Option {
	return func(m *Manager) error {
		for _, c := range cidrs {
			if !c.IsValid() {
				return fmt.Errorf("prober: invalid probe host CIDR %v", c)
			}
			m.hostCIDRs = append(m.hostCIDRs, c.Masked())
		}
		return nil
	}
}

// WithProbeOrigin sets where HTTP, gRPC and TCP-dial probes connect from
// for pods that do not say (probelet.io/probe-origin): the node's network
// namespace (the kubelet's way, the default) or the pod's own. pins pin
// the pods' namespaces for the pod origin; nil with pinsErr, why none can
// be, makes every pod-origin probe a prober error saying so.
func WithProbeOrigin(o probespec.Origin, pins *podnet.Pins, pinsErr error) Option {
	return func(m *Manager) error {
		if _, err := probespec.ParseOrigin(string(o)); err != nil {
			return fmt.Errorf("prober: probe origin: %w", err)
		}
		m.probeOrigin, m.pins = o, pins
		if pins == nil && pinsErr != nil {
			m.pinsErr = pinsErr
		}
		return nil
	}
}

// WithNamespaceGrants says the API server tells, per pod, whether its
// namespace lets its probes name any host (node.APIPod.ProbeHostAllowed).
// Until it has told, a probe host that nothing else allows waits: it is
// neither rejected nor dialed. Without it (node-only) such a host is
// rejected at once.
func WithNamespaceGrants() Option {
	return func(m *Manager) error {
		m.namespaceGrants = true
		return nil
	}
}
