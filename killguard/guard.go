package killguard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/prober"
)

// passInterval is how often the guard looks at the node again without a
// new kill: the state follows the probes, a held kill goes through once
// the node is Normal again, a token comes due.
const passInterval = time.Second

// CensusSource counts the node's liveness- or startup-probed pods and how
// many have a probe at its failureThreshold; the engine's LivenessCensus.
type CensusSource func() Census

// Budget says why killing k would take its workload below its
// PodDisruptionBudget, or "" when it would not (kube/pdb).
type Budget func(k prober.Kill) string

// Guard is the kill guard, a prober.ContainerKiller in front of the real
// one. Run must run for kills to go through.
type Guard struct {
	inner  prober.ContainerKiller
	cfg    Config
	budget Budget
	clock  clock.WithTicker
	log    *zap.Logger
	m      *Metrics

	// primary is the Normal bucket, secondary the PartialDisruption one
	// (separate, as the controller's: a partial disruption does not spend
	// what a normal burst saved).
	primary, secondary *rate.Limiter

	kick chan struct{}

	mu         sync.Mutex
	queue      map[string]*request // by container ID
	state      State
	stateSince time.Time
}

var (
	_ prober.ContainerKiller = (*Guard)(nil)
	_ prober.FailureObserver = (*Guard)(nil)
)

// request is one kill in the queue.
type request struct {
	kill       prober.Kill
	decided    time.Time
	lastFailed time.Time     // when its probe last failed (ProbeFailed), from decided on
	admit      chan struct{} // closed when the kill may go
	held       chan string   // the newest deferral reason for KillContainer to report (buffer 1)
	told       string        // the deferral reason last given
	heldAt     time.Time     // when it was first held back
}

// ErrQueued refuses a second kill of a container whose kill is queued: the
// queue holds each container once, at its first decision time.
var ErrQueued = errors.New("killguard: a kill of this container is already queued")

// Option configures a Guard.
type Option func(*Guard) error

// WithClock sets the clock (tests: a fake one).
func WithClock(c clock.WithTicker) Option {
	return func(g *Guard) error {
		if c == nil {
			return errors.New("killguard: nil clock")
		}
		g.clock = c
		return nil
	}
}

// WithLogger sets the logger.
func WithLogger(l *zap.Logger) Option {
	return func(g *Guard) error {
		if l == nil {
			return errors.New("killguard: nil logger")
		}
		g.log = l
		return nil
	}
}

// WithMetrics sets the metrics (default: unregistered).
func WithMetrics(m *Metrics) Option {
	return func(g *Guard) error {
		if m == nil {
			return errors.New("killguard: nil metrics")
		}
		g.m = m
		return nil
	}
}

// WithBudget makes kills respect PodDisruptionBudgets too.
func WithBudget(b Budget) Option {
	return func(g *Guard) error {
		if b == nil {
			return errors.New("killguard: nil budget")
		}
		g.budget = b
		return nil
	}
}

// New returns a guard in front of inner.
func New(inner prober.ContainerKiller, cfg Config, opts ...Option) (*Guard, error) {
	if inner == nil {
		return nil, errors.New("killguard: nil killer")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("killguard: %w", err)
	}
	g := &Guard{inner: inner, cfg: cfg, clock: clock.RealClock{}, log: zap.NewNop(),
		kick: make(chan struct{}, 1), queue: map[string]*request{}}
	for _, o := range opts {
		if err := o(g); err != nil {
			return nil, err
		}
	}
	if g.m == nil {
		g.m = NewMetrics()
	}
	g.primary = rate.NewLimiter(rate.Limit(cfg.Rate), cfg.Burst)
	// A secondary rate of 0 pauses kills in a partial disruption too: no
	// token to start with.
	g.secondary = rate.NewLimiter(rate.Limit(cfg.SecondaryRate), min(1, int(math.Ceil(cfg.SecondaryRate))))
	g.stateSince = g.clock.Now()
	g.m.setState(Normal)
	return g, nil
}

// KillContainer queues k and, once admitted, hands it to the inner killer,
// which reports the rest; while it waits, each new reason is reported as
// KillDeferred, and the engine's cancelling ctx (the probe recovered, a new
// container came, the engine stops) ends it as KillCancelled. A container
// is queued once: a repeat fails with ErrQueued (the engine asks once per
// container instance).
func (g *Guard) KillContainer(ctx context.Context, k prober.Kill, report chan<- prober.KillOutcome) {
	g.mu.Lock()
	if _, ok := g.queue[k.ContainerID]; ok {
		g.mu.Unlock()
		report <- prober.KillOutcome{Kind: prober.KillFailed, Err: ErrQueued}
		return
	}
	decided := k.Decided
	if decided.IsZero() {
		decided = g.clock.Now()
	}
	r := &request{kill: k, decided: decided, lastFailed: decided, admit: make(chan struct{}), held: make(chan string, 1)}
	g.queue[k.ContainerID] = r
	g.m.queue.Set(float64(len(g.queue)))
	g.mu.Unlock()
	g.signal()
	// Only this goroutine reports, so that nothing follows the final
	// outcome.
	for {
		select {
		case <-r.admit:
			g.inner.KillContainer(ctx, k, report)
			return
		case why := <-r.held:
			report <- prober.KillOutcome{Kind: prober.KillDeferred, Reason: why}
		case <-ctx.Done():
			g.drop(r)
			report <- prober.KillOutcome{Kind: prober.KillCancelled, Err: ctx.Err()}
			return
		}
	}
}

// ProbeFailed implements prober.FailureObserver: the held kill's probe
// failed again at at.
func (g *Guard) ProbeFailed(containerID string, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r, ok := g.queue[containerID]; ok && at.After(r.lastFailed) {
		r.lastFailed = at
	}
}

func (g *Guard) drop(r *request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.queue[r.kill.ContainerID] == r {
		delete(g.queue, r.kill.ContainerID)
		g.m.queue.Set(float64(len(g.queue)))
	}
}

func (g *Guard) signal() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// Run lets kills through until ctx ends. census is read on every pass.
func (g *Guard) Run(ctx context.Context, census CensusSource) error {
	tick := g.clock.NewTicker(passInterval)
	defer tick.Stop()
	for {
		g.pass(census())
		select {
		case <-ctx.Done():
			return nil
		case <-g.kick:
		case <-tick.C():
		}
	}
}

// pass classifies the node and lets through what may go, oldest decision
// first; it tells the engine why the others wait.
func (g *Guard) pass(c Census) {
	now := g.clock.Now()
	g.mu.Lock()
	g.transition(g.cfg.classify(c), c, now)
	queue := make([]*request, 0, len(g.queue))
	for _, r := range g.queue {
		queue = append(queue, r)
	}
	slices.SortFunc(queue, func(a, b *request) int {
		return cmp.Or(a.decided.Compare(b.decided), cmp.Compare(a.kill.ContainerID, b.kill.ContainerID))
	})
	for _, r := range queue {
		why := ""
		if now.Sub(r.decided) < g.cfg.Ceiling {
			why = g.holdReason(r, c, now)
		}
		if why == "" {
			delete(g.queue, r.kill.ContainerID)
			close(r.admit)
			continue
		}
		if why != r.told {
			if r.told == "" {
				g.m.deferred.Inc()
				r.heldAt = now
			}
			r.told = why
			// The newest reason replaces one not reported yet; only
			// pass sends, so this never blocks.
			select {
			case <-r.held:
			default:
			}
			r.held <- why
		}
	}
	g.m.queue.Set(float64(len(g.queue)))
	g.mu.Unlock()
}

// holdReason says why r waits now, or "" when it may go (spending a token).
func (g *Guard) holdReason(r *request, c Census, now time.Time) string {
	since := g.stateSince.UTC().Format(time.TimeOnly)
	if g.state == FullDisruption {
		return fmt.Sprintf("node in FullDisruption, %s since %s", c, since)
	}
	// A kill held through a disruption goes only once its probe failed
	// again since the node calmed down: as a shared outage ends, the
	// probes recover one period at a time, and a probe that has not run
	// since must not be killed for the outage's failures.
	if r.told != "" && r.heldAt.Before(g.stateSince) && !r.lastFailed.After(g.stateSince) {
		return fmt.Sprintf("node in %s since %s, %s: waiting for the probe to fail again before killing", g.state, since, c)
	}
	if g.budget != nil {
		if why := g.budget(r.kill); why != "" {
			return why
		}
	}
	switch g.state {
	case PartialDisruption:
		if !g.secondary.AllowN(now, 1) {
			pace := "kills paused (secondary rate 0)"
			if g.cfg.SecondaryRate > 0 {
				pace = "kills go at 1 per " + every(g.cfg.SecondaryRate)
			}
			return fmt.Sprintf("node in PartialDisruption, %s since %s: %s", c, since, pace)
		}
	default:
		if !g.primary.AllowN(now, 1) {
			return fmt.Sprintf("kill rate limit: %d at once, then 1 per %s", g.cfg.Burst, every(g.cfg.Rate))
		}
	}
	return ""
}

// transition records a new state: a log line, the metric.
func (g *Guard) transition(st State, c Census, now time.Time) {
	if st == g.state {
		return
	}
	g.log.Info("Kill guard: node state changed", zap.String("from", g.state.String()), zap.String("to", st.String()),
		zap.Int("failing", c.Failing), zap.Int("probed", c.Probed), zap.Int("queued", len(g.queue)))
	g.state, g.stateSince = st, now
	g.m.setState(st)
}

// State reports the node's state and since when.
func (g *Guard) State() (State, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state, g.stateSince
}

// every is the interval between kills at perSecond (> 0).
func every(perSecond float64) string {
	return (time.Duration(float64(time.Second) / perSecond)).Round(time.Millisecond).String()
}
