package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/probelet/probelet/node"
	"go.uber.org/zap"
	"k8s.io/utils/clock"
)

// ListedSandbox is a sandbox as a runtime listing reports it.
type ListedSandbox struct {
	Sandbox
	// Ready is false once the sandbox was stopped.
	Ready bool
}

// ErrNotFound is what RuntimeLister's Status calls wrap when the runtime
// does not know the item (any more).
var ErrNotFound = errors.New("not found by the runtime")

// RuntimeLister is the runtime's own account (CRI) that the safety
// reconcile compares the cache with. Listings may leave fields zero; the
// Status calls return everything the runtime knows about one item.
type RuntimeLister interface {
	ListSandboxes(ctx context.Context) ([]ListedSandbox, error)
	ListContainers(ctx context.Context) ([]Container, error)
	SandboxStatus(ctx context.Context, id string) (Sandbox, error)
	ContainerStatus(ctx context.Context, id string) (Container, error)
}

// Drift counts, by kind (DriftPodMissing, ...), what one reconcile fixed.
type Drift map[string]int

// Reconciler periodically compares the cache with the runtime's CRI
// listing and fixes what NRI events missed.
type Reconciler struct {
	cache    *Cache
	rt       RuntimeLister
	interval time.Duration
	clock    clock.WithTicker
	log      *zap.Logger
}

// ReconcilerOption configures a Reconciler.
type ReconcilerOption func(*Reconciler) error

// WithReconcileClock sets the clock that paces the reconcile.
func WithReconcileClock(c clock.WithTicker) ReconcilerOption {
	return func(r *Reconciler) error {
		if c == nil {
			return errors.New("lifecycle: nil clock")
		}
		r.clock = c
		return nil
	}
}

// WithReconcileLogger sets the reconciler's logger.
func WithReconcileLogger(l *zap.Logger) ReconcilerOption {
	return func(r *Reconciler) error {
		if l == nil {
			return errors.New("lifecycle: nil logger")
		}
		r.log = l
		return nil
	}
}

// NewReconciler returns a reconciler for cache. interval 0 disables the
// periodic run (Run then only dates sandboxes); Once still works.
func NewReconciler(cache *Cache, rt RuntimeLister, interval time.Duration, opts ...ReconcilerOption) (*Reconciler, error) {
	if cache == nil || rt == nil {
		return nil, errors.New("lifecycle: reconciler needs a cache and a runtime lister")
	}
	if interval < 0 {
		return nil, fmt.Errorf("lifecycle: negative reconcile interval %s", interval)
	}
	r := &Reconciler{cache: cache, rt: rt, interval: interval, clock: clock.RealClock{}, log: cache.log}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	cache.mu.Lock()
	cache.trackRemovals = interval > 0
	cache.removed = map[string]time.Time{}
	cache.mu.Unlock()
	return r, nil
}

// Run reconciles every interval (never when it is 0) and, whenever the
// cache records sandboxes without a creation time (NRI's Synchronize does
// not carry it), reads their times from CRI, until ctx is done.
func (r *Reconciler) Run(ctx context.Context) {
	var tick <-chan time.Time
	if r.interval > 0 {
		t := r.clock.NewTicker(r.interval)
		defer t.Stop()
		tick = t.C()
	}
	d := &dater{r: r}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			r.periodic(ctx)
		case <-r.cache.undated:
			d.run(ctx)
		case <-d.retry:
			d.run(ctx)
		}
	}
}

func (r *Reconciler) periodic(ctx context.Context) {
	if d, err := r.Once(ctx); err != nil {
		r.log.Warn("CRI reconcile failed", zap.Error(err))
	} else if len(d) > 0 {
		r.log.Info("CRI reconcile fixed drift", zap.Any("drift", d))
	}
}

// Once lists the runtime's sandboxes and containers, fixes every
// difference with the cache that NRI events did not explain, and reports
// what it fixed. Items the cache heard about after the listing started are
// left alone: the listing may predate them.
func (r *Reconciler) Once(ctx context.Context) (Drift, error) {
	start := r.cache.clock.Now()
	d, err := r.once(ctx, start)
	result := "ok"
	if err != nil {
		result = "error"
	}
	r.cache.m.reconcile.WithLabelValues(result).Inc()
	r.cache.pruneTombstones(start)
	return d, err
}

func (r *Reconciler) once(ctx context.Context, start time.Time) (Drift, error) {
	sbs, err := r.rt.ListSandboxes(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	ctrs, err := r.rt.ListContainers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	r.cache.fillCreated(sbs)
	p := planFrom(r.cache.inventory(), start, sbs, ctrs)
	return r.cache.applyPlan(start, p, r.fetch(ctx, p)), nil
}

// planFrom compares a listing taken at start with the cache's inventory.
// Only live items count as missing: the cache never learns exited
// containers from NRI. Items the cache heard of after start are left out:
// the listing may predate them.
func planFrom(inv inventory, start time.Time, sbs []ListedSandbox, ctrs []Container) plan {
	p := plan{sandboxOf: make(map[string]string, len(ctrs))}
	listed := make(map[string]bool, len(sbs)+len(ctrs))
	for _, sb := range sbs {
		listed[sb.ID] = true
		pm, ok := inv.pods[sb.ID]
		switch {
		case !ok && sb.Ready && !inv.removed[sb.ID]:
			p.missingPods = append(p.missingPods, sb.ID)
		case ok && !sb.Ready && !pm.stopped && pm.seen.Before(start):
			p.stoppedPods = append(p.stoppedPods, sb.ID)
		}
	}
	for id, pm := range inv.pods {
		if !listed[id] && pm.seen.Before(start) {
			p.vanishedPods = append(p.vanishedPods, id)
		}
	}
	for _, ct := range ctrs {
		listed[ct.ID] = true
		p.sandboxOf[ct.ID] = ct.SandboxID
		cm, ok := inv.ctrs[ct.ID]
		switch {
		case !ok && ct.State != node.StateExited && !inv.removed[ct.ID]:
			p.missingCtrs = append(p.missingCtrs, ct.ID)
		case ok && cm.state.Before(ct.State) && cm.seen.Before(start):
			p.changedCtrs = append(p.changedCtrs, ct.ID)
		}
	}
	for id, cm := range inv.ctrs {
		if !listed[id] && cm.seen.Before(start) {
			p.vanishedCtrs = append(p.vanishedCtrs, id)
		}
	}
	return p
}

// fetch asks the runtime for the details of items the cache must add or
// update. An item whose status fails (it may have just been removed) is
// skipped until the next run.
func (r *Reconciler) fetch(ctx context.Context, p plan) fetched {
	var f fetched
	for _, id := range p.missingPods {
		sb, err := r.rt.SandboxStatus(ctx, id)
		if err != nil {
			r.log.Debug("Reconcile: pod sandbox status failed", zap.String("sandboxID", id), zap.Error(err))
			continue
		}
		f.pods = append(f.pods, sb)
	}
	for _, id := range append(append([]string{}, p.missingCtrs...), p.changedCtrs...) {
		ct, err := r.rt.ContainerStatus(ctx, id)
		if err != nil {
			r.log.Debug("Reconcile: container status failed", zap.String("containerID", id), zap.Error(err))
			continue
		}
		if ct.SandboxID == "" {
			ct.SandboxID = p.sandboxOf[id]
		}
		f.ctrs = append(f.ctrs, ct)
	}
	return f
}
