package lifecycle

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/internal/fanout"
	"github.com/probelet/probelet/node"
)

// Cache is the node's pod/container cache, fed by runtime events. Every
// change is handed to the Sink (the probe engine) as a pod snapshot right
// away, in the caller's goroutine and under the cache's lock (see Sink for
// the lock order), and announced to lifecycle event subscribers without
// blocking. All methods are safe for concurrent use.
type Cache struct {
	mu     sync.Mutex
	clock  clock.PassiveClock
	log    *zap.Logger
	sink   Sink
	reg    prometheus.Registerer
	m      *metrics
	events *fanout.Hub[node.Event]

	pods  map[string]*podEntry            // by sandbox ID
	byKey map[string]map[string]*podEntry // pod key (UID) → sandbox ID → entry
	ctrs  map[string]*ctrEntry            // by container ID
	api   map[string]*node.APIPod         // by pod UID: what the API server adds
	seq   uint64

	// removed remembers recently removed pod and container IDs so a
	// reconcile working from an older CRI listing does not resurrect them.
	// Only kept while a Reconciler is attached.
	trackRemovals bool
	removed       map[string]time.Time

	// undated signals (buffer 1, never blocking) that a sandbox without a
	// creation time, or a container without the facts of its state, was
	// recorded; the Reconciler asks CRI for them.
	undated chan struct{}
	// unfilled are the containers whose facts the Reconciler is to read.
	unfilled map[string]bool
}

// podEntry is one sandbox and what was derived from it.
type podEntry struct {
	sb      Sandbox
	seq     uint64
	stopped bool
	seen    time.Time
	ctrs    map[string]*ctrEntry
	// dateAsked is set once the reconciler was told this sandbox has no
	// creation time, so it is asked once, not on every event.
	dateAsked bool
	// orphan is set when a Synchronize lists the sandbox: after a runtime
	// restart nobody announces its stop or removal (containerd #8426). A
	// StopPodSandbox shows the runtime does track it and clears it.
	orphan bool
}

// ctrEntry is one container instance.
type ctrEntry struct {
	c         node.Container
	sandboxID string
	seq       uint64
	seen      time.Time
	// orphan marks an exited container kept through a Synchronize: after
	// a runtime restart nobody announces its removal (containerd #8426).
	orphan bool
	// factsAsked is the state the reconciler was last asked to fill facts
	// for; askedFacts says whether it was asked at all.
	factsAsked node.ContainerState
	askedFacts bool
}

// Option configures a Cache.
type Option func(*Cache) error

// WithClock sets the clock used for event times and latencies.
func WithClock(c clock.PassiveClock) Option {
	return func(cc *Cache) error {
		if c == nil {
			return errors.New("lifecycle: nil clock")
		}
		cc.clock = c
		return nil
	}
}

// WithLogger sets the logger.
func WithLogger(l *zap.Logger) Option {
	return func(cc *Cache) error {
		if l == nil {
			return errors.New("lifecycle: nil logger")
		}
		cc.log = l
		return nil
	}
}

// WithRegisterer registers the cache's metrics with r.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(cc *Cache) error {
		cc.reg = r
		return nil
	}
}

// New returns an empty cache that drives sink.
func New(sink Sink, opts ...Option) (*Cache, error) {
	if sink == nil {
		return nil, errors.New("lifecycle: nil pod sink")
	}
	c := &Cache{
		clock: clock.RealClock{},
		log:   zap.NewNop(),
		sink:  sink,
		m:     newMetrics(),
		pods:  map[string]*podEntry{},
		byKey: map[string]map[string]*podEntry{},
		ctrs:  map[string]*ctrEntry{},
		api:   map[string]*node.APIPod{},

		undated:  make(chan struct{}, 1),
		unfilled: map[string]bool{},
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.reg != nil {
		if err := c.m.register(c.reg); err != nil {
			return nil, err
		}
	}
	c.events = fanout.New[node.Event](c.m.dropped.Inc)
	return c, nil
}
