package ebpf

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/ebpf/tracker"
	"github.com/probelet/probelet/internal/promutil"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

var _ probe.InstantTCPProber = (*TCPProber)(nil)

// TCPProber answers TCP probes from the eBPF listener table when it can and
// dials otherwise. It is safe for concurrent use.
type TCPProber struct {
	scConfig // the options the short-circuit shares
	fallback probe.TCPProber
	verify   bool
	reg      prometheus.Registerer

	status  Status       // its Mode is the mode in force
	sc      shortCircuit // nil when dialing
	viaEBPF prometheus.Counter
	viaDial prometheus.Counter
	owned   []prometheus.Collector // registered by this prober
}

// shortCircuit is the platform part: the listener table and what feeds it.
type shortCircuit interface {
	// answer decides target without a connection; ok false (with a reason
	// for the metrics) means only a dial can tell.
	answer(t probe.TCPTarget) (res probe.Result, output, reason string, ok bool)
	// instant is answer from memory alone: it never blocks, and ok false
	// means answer may need I/O (sock_diag, a dial) to decide.
	instant(t probe.TCPTarget) (res probe.Result, output string, ok bool)
	// sync waits until every listener change made before the call is in
	// the table.
	sync(ctx context.Context) error
	// collectors are the short-circuit's own metrics.
	collectors() []prometheus.Collector
	// features are the tracker's optional kernel capabilities in use.
	features() tracker.Features
	close() error
}

// scConfig is what a short-circuit is built from.
type scConfig struct {
	log      *zap.Logger
	clock    clock.WithTicker
	interval time.Duration
	metrics  *metrics
	features tracker.Features // optional kernel capabilities allowed
}

// NewTCPProber returns a TCP prober in the given mode. ModeAuto and
// ModeEBPF load the eBPF tracker (which needs CAP_BPF and CAP_PERFMON, and
// CAP_SYS_ADMIN to query pod namespaces with sock_diag); ModeAuto falls back
// to dialing when that fails and logs why once, ModeEBPF returns the error.
// ctx bounds the start-up only.
func NewTCPProber(ctx context.Context, mode Mode, opts ...Option) (*TCPProber, error) {
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	p := &TCPProber{
		scConfig: scConfig{
			log:      zap.NewNop(),
			clock:    clock.RealClock{},
			interval: DefaultReconcileInterval,
			metrics:  newMetrics(),
			features: tracker.AllFeatures,
		},
		fallback: tcpprobe.NewDialer(),
		reg:      prometheus.NewRegistry(),
	}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	if err := p.start(ctx, mode); err != nil {
		return nil, err
	}
	if err := p.registerMetrics(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *TCPProber) start(ctx context.Context, mode Mode) error {
	p.status.Requested, p.status.Mode = mode, ModeDial
	if mode == ModeDial {
		p.log.Info("TCP probes dial (tcp mode dial)")
		return nil
	}
	sc, err := newShortCircuit(ctx, p.scConfig)
	switch {
	case err == nil:
		p.sc, p.status.Mode = sc, ModeEBPF
		p.status.Features = sc.features().String()
		p.log.Info("TCP probes are answered from the eBPF listener table", zap.Bool("verify", p.verify))
	case mode == ModeEBPF:
		return fmt.Errorf("tcp mode ebpf: %w", err)
	default:
		p.status.Reason, p.status.Cause = err.Error(), loadCause(err)
		p.log.Warn("eBPF TCP short-circuit unavailable; TCP probes dial", zap.String("cause", p.status.Cause), zap.Error(err))
	}
	return nil
}

func (p *TCPProber) registerMetrics() error {
	p.viaEBPF = p.metrics.answered.WithLabelValues(string(probe.MethodEBPF))
	p.viaDial = p.metrics.answered.WithLabelValues(string(probe.MethodDial))
	p.metrics.mode.WithLabelValues(string(p.status.Mode)).Set(1)
	if p.status.FellBack() {
		p.metrics.unavailable.WithLabelValues(p.status.Cause).Set(1)
	}
	cs := p.metrics.collectors()
	if p.sc != nil {
		cs = append(cs, p.sc.collectors()...)
	}
	if err := promutil.Register(p.reg, cs...); err != nil {
		return err
	}
	p.owned = cs
	return nil
}

// Mode is the effective mode: ModeEBPF when the short-circuit is in use,
// else ModeDial.
func (p *TCPProber) Mode() Mode { return p.status.Mode }

// Status says how TCP probes are answered and, when ModeAuto fell back to
// dialing, why.
func (p *TCPProber) Status() Status { return p.status }

// ProbeTCP answers target from the listener table, or dials when the
// table cannot decide. The Method says which one answered.
func (p *TCPProber) ProbeTCP(ctx context.Context, target probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	if p.sc == nil || !valid(target) || ctx.Err() != nil {
		// The dialer reports invalid targets and cancelled contexts.
		return p.dial(ctx, target)
	}
	res, out, reason, ok := p.sc.answer(target)
	if !ok {
		p.metrics.fallback.WithLabelValues(reason).Inc()
		return p.dial(ctx, target)
	}
	if p.verify {
		return p.compare(ctx, target, res, out)
	}
	p.viaEBPF.Inc()
	return res, out, probe.MethodEBPF, nil
}

// ProbeTCPInstant answers target from the listener table when the table
// alone decides it, without blocking; ok is false whenever ProbeTCP would
// have to wait for something: a dial (no short-circuit, verify mode, the
// table cannot tell) or sock_diag (a namespace to confirm, an accept queue
// to read). Nothing is counted then: ProbeTCP counts the probe.
func (p *TCPProber) ProbeTCPInstant(target probe.TCPTarget) (probe.Result, string, probe.Method, bool) {
	if p.sc == nil || p.verify || !valid(target) {
		return "", "", "", false
	}
	res, out, ok := p.sc.instant(target)
	if !ok {
		return "", "", "", false
	}
	p.viaEBPF.Inc()
	return res, out, probe.MethodEBPF, true
}

// StartTCP begins a dial without blocking where this prober dials (no
// short-circuit; see tcpprobe.Dialer.StartTCP), counted like ProbeTCP's.
// With the short-circuit, a probe the table could not answer at once may
// need sock_diag or verify's comparison: it is declined, for ProbeTCP on a
// runner.
func (p *TCPProber) StartTCP(target probe.TCPTarget) (probe.Result, string, probe.Method, probe.TCPPending, bool) {
	s, ok := p.fallback.(probe.TCPStarter)
	if p.sc != nil || !ok {
		return "", "", "", nil, false
	}
	res, out, method, pending, ok := s.StartTCP(target)
	if ok || pending != nil {
		p.viaDial.Inc()
	}
	return res, out, method, pending, ok
}

func (p *TCPProber) dial(ctx context.Context, target probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	p.viaDial.Inc()
	return p.fallback.ProbeTCP(ctx, target)
}

func valid(t probe.TCPTarget) bool {
	return t.Host != "" && t.Port >= 1 && t.Port <= 65535 && t.Timeout > 0
}

// Sync waits until every listener change made before the call is visible
// to ProbeTCP. It returns at once when dialing.
func (p *TCPProber) Sync(ctx context.Context) error {
	if p.sc == nil {
		return nil
	}
	return p.sc.sync(ctx)
}

// Close unloads the short-circuit and unregisters the metrics. The prober
// must not be used afterwards. A nil prober (what NewTCPProber returns
// with an error) closes as a no-op, so cleanup after a failed start-up
// never panics, even when the nil pointer sits in an interface.
func (p *TCPProber) Close() error {
	if p == nil {
		return nil
	}
	for _, c := range p.owned {
		p.reg.Unregister(c)
	}
	p.owned = nil
	if p.sc == nil {
		return nil
	}
	return p.sc.close()
}
