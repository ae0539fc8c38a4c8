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
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/internal/fanout"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/prober/spec"
)

const (
	defaultConcurrency = 64
	defaultHistory     = 10
	// specMemoSize bounds the distinct probes annotations kept parsed: a
	// node runs at most a few hundred pods, and replicas share one value.
	specMemoSize = 512
)

var _ StatusSource = (*Manager)(nil)

// Manager owns the probe workers of every pod on the node. UpdatePod,
// RemovePod and SyncPods feed it; Containers, Container and the
// subscriptions read it. All methods are safe for concurrent use.
type Manager struct {
	clock       clock.Clock
	log         *zap.Logger
	registerer  prometheus.Registerer
	handlers    handlers
	killer      ContainerKiller
	jitter      func() float64
	concurrency int
	historyLen  int
	action      LivenessAction
	agentStart  time.Time

	metrics *metrics
	cache   *results.Cache
	changes *fanout.Hub[ResultChange]
	events  *fanout.Hub[Event]
	pool    *pool
	specs   SpecParser

	// ctx is the parent of every worker's context and of kills; Stop cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wakeCh chan struct{}
	done   chan struct{}
	kills  sync.WaitGroup
	stop   sync.Once

	mu       sync.Mutex
	pods     map[string]*podEntry
	byID     map[string]*podEntry
	queue    dueQueue
	inflight int
	killing  int
	running  bool
	stopped  bool
	// gen counts changes of the earliest due time; parked is set while the
	// scheduler sleeps with its timer set for that time.
	gen    uint64
	parked bool
	idleCh chan struct{}
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
		cache:       results.NewCache(),
		specs:       spec.NewMemo(specMemoSize),
		wakeCh:      make(chan struct{}, 1),
		done:        make(chan struct{}),
		pods:        make(map[string]*podEntry),
		byID:        make(map[string]*podEntry),
	}
	for _, o := range opts {
		if err := o(m); err != nil {
			return nil, err
		}
	}
	m.queue.base = m.clock.Now()
	if m.agentStart.IsZero() {
		m.agentStart = m.queue.base
	}
	var err error
	if m.metrics, err = newMetrics(m.registerer); err != nil {
		return nil, err
	}
	m.changes = fanout.New[ResultChange](m.metrics.dropped.WithLabelValues("results").Inc)
	m.events = fanout.New[Event](m.metrics.dropped.WithLabelValues("events").Inc)
	m.pool = newPool(m.concurrency, m.execute)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Start runs the scheduler until ctx ends or Stop is called. Workers added
// before Start wait for it.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.stopped:
		return errors.New("prober: manager stopped")
	case m.running:
		return errors.New("prober: manager already started")
	}
	m.running = true
	go m.loop(ctx)
	return nil
}

// Stop stops every worker, cancels in-flight probes and kills, waits for
// them and closes all subscriptions. It is idempotent.
func (m *Manager) Stop() {
	m.stop.Do(func() {
		m.mu.Lock()
		m.stopped = true
		started := m.running
		for _, pe := range m.pods {
			m.removePodLocked(pe)
		}
		m.mu.Unlock()
		m.cancel()
		if started {
			<-m.done
		}
		m.pool.close()
		m.kills.Wait()
		m.changes.Close()
		m.events.Close()
	})
}
