// Package prober runs liveness, readiness and startup probes with the
// kubelet's semantics. One scheduler goroutine keeps every probe worker in
// a min-heap of due times and hands due probes to a bounded pool of
// runners; workers follow their container across restarts, publish
// results only on change and ask for restarts on liveness/startup failure.
package prober

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/internal/fanout"
	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/probespec"
)

const (
	defaultConcurrency = 64
	defaultHistory     = 10
	// specMemoBytes bounds the parsed probes annotations kept: replicas
	// share one value, and a value is at most 64 KiB
	// (spec.MaxAnnotationBytes), so this holds dozens of the largest.
	specMemoBytes = 8 << 20
)

var _ StatusSource = (*Manager)(nil)

// Manager owns the probe workers of every pod on the node. UpdatePod,
// RemovePod and SyncPods feed it; Containers, Container and the
// subscriptions read it. All methods are safe for concurrent use.
type Manager struct {
	clock      clock.Clock
	log        *zap.Logger
	registerer prometheus.Registerer
	handlers   handlers
	// instantTCP is handlers.tcp when it can answer from memory.
	instantTCP probe.InstantTCPProber
	// startTCP is handlers.tcp when it can begin a probe without blocking.
	startTCP    probe.TCPStarter
	killer      ContainerKiller
	jitter      func() float64
	concurrency int
	historyLen  int
	action      LivenessAction
	agentStart  time.Time
	// hostCIDRs and namespaceGrants widen what probe hosts may be
	// (hostScope).
	hostCIDRs       []netip.Prefix
	namespaceGrants bool
	// probeOrigin is where HTTP, gRPC and TCP-dial probes connect from
	// unless a pod says (origin.go); pins pin the pods' namespaces for
	// the pod origin, nil (with pinsErr) when none can be.
	probeOrigin probespec.Origin
	pins        *podnet.Pins
	pinsErr     error

	metrics *metrics
	changes *fanout.Hub[ResultChange]
	events  *fanout.Hub[Event]
	sched   *scheduler
	specs   SpecParser
	history RestartHistory // nil: restarts live as long as the engine

	// ctx is the parent of every worker's context and of kills; the end
	// of Run cancels it. (Workers may be made before Run, from UpdatePod,
	// so they cannot take Run's context as a parameter.)
	ctx    context.Context
	cancel context.CancelFunc
	// runStarted is closed when Run starts, done when it has shut
	// everything down.
	runStarted chan struct{}
	done       chan struct{}
	kills      sync.WaitGroup

	// mu guards the pods, the workers and the scheduler (but for its
	// atomics and its pool's own lock).
	mu       sync.Mutex
	reg      registry
	inflight int
	killing  int
	// round is the open round's TCP probes to answer without the lock.
	round   roundProbes
	running bool
	stopped bool
	idleCh  chan struct{}
}

// NewManager returns a Manager; call Start to begin probing.
func NewManager(opts ...Option) (*Manager, error) {
	m := &Manager{
		clock:       clock.RealClock{},
		log:         zap.NewNop(),
		registerer:  prometheus.NewRegistry(),
		handlers:    defaultHandlers(),
		jitter:      rand.Float64,
		concurrency: defaultConcurrency,
		historyLen:  defaultHistory,
		specs:       probespec.NewMemo(specMemoBytes),
		runStarted:  make(chan struct{}),
		done:        make(chan struct{}),
		reg:         newRegistry(),
		probeOrigin: probespec.OriginNode,
		pinsErr:     errors.New("no namespace pins were given (prober.WithProbeOrigin)"),
	}
	for _, o := range opts {
		if err := o(m); err != nil {
			return nil, err
		}
	}
	m.instantTCP, _ = m.handlers.tcp.(probe.InstantTCPProber)
	m.startTCP, _ = m.handlers.tcp.(probe.TCPStarter)
	if m.agentStart.IsZero() {
		m.agentStart = m.clock.Now()
	}
	m.sched = newScheduler(m.clock, m.jitter, m.agentStart, newPool(m.concurrency, m.execute))
	var err error
	if m.metrics, err = newMetrics(m.registerer, m.sched.pool.runners); err != nil {
		return nil, err
	}
	m.changes = fanout.New[ResultChange](m.metrics.dropped.WithLabelValues("results").Inc)
	m.events = fanout.New[Event](m.metrics.dropped.WithLabelValues("events").Inc)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Run probes until ctx ends, then stops every worker, cancels in-flight
// probes and kills, waits for them and closes all subscriptions before it
// returns: ctx owns the engine's life. Workers added before Run wait for
// it. A Manager runs once.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	switch {
	case m.stopped:
		m.mu.Unlock()
		return errors.New("prober: manager already ran")
	case m.running:
		m.mu.Unlock()
		return errors.New("prober: manager already running")
	}
	m.running = true
	m.sched.start(m.alarmFailed)
	close(m.runStarted)
	m.mu.Unlock()
	m.loop(ctx)
	m.shutdown()
	return nil
}

// alarmFailed hears that the scheduler's timer file refused a setting
// and a Go timer took over: probing goes on, at a few more thread
// wake-ups per round.
func (m *Manager) alarmFailed(err error) {
	m.log.Error("The scheduler's timer file failed; a Go timer took over", zap.Error(err))
}

// shutdown is the end of Run.
func (m *Manager) shutdown() {
	m.mu.Lock()
	m.stopped = true
	for _, pe := range m.reg.pods {
		m.removePodLocked(pe)
	}
	m.mu.Unlock()
	m.cancel()
	m.kills.Wait()
	m.sched.close()
	m.changes.Close()
	m.events.Close()
	close(m.done)
}
