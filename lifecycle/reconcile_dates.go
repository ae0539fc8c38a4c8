package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Bounds of the wait before asking CRI again for creation times after a
// failed listing (the CRI service may come up after NRI's Synchronize).
const (
	dateRetryMin = 500 * time.Millisecond
	dateRetryMax = 30 * time.Second
)

// dateSandboxes lists the runtime's sandboxes and gives every cached one
// without a creation time the runtime's; with none such it lists nothing
// (the request may have been a container's). It runs in the reconciler's
// goroutine, never in an NRI handler.
func (r *Reconciler) dateSandboxes(ctx context.Context) error {
	if !r.cache.hasUndated() {
		return nil
	}
	sbs, err := r.rt.ListSandboxes(ctx)
	if err != nil {
		return fmt.Errorf("list pod sandboxes for their creation times: %w", err)
	}
	if n := r.cache.fillCreated(sbs); n > 0 {
		r.log.Debug("Filled pod creation times from CRI", zap.Int("pods", n))
	}
	return nil
}

// hasUndated reports whether a cached sandbox has no creation time.
func (c *Cache) hasUndated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pe := range c.pods {
		if pe.sb.CreatedAt.IsZero() {
			return true
		}
	}
	return false
}

// fillCreated sets the creation time of cached sandboxes that have none
// from a listing and hands the pods to the engine again (which sandbox of
// a pod is current depends on it). It is not drift: NRI never carries the
// time. It returns how many sandboxes it dated.
func (c *Cache) fillCreated(sbs []ListedSandbox) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	touched := map[string]bool{}
	n := 0
	for _, sb := range sbs {
		pe, ok := c.pods[sb.ID]
		if !ok || !pe.sb.CreatedAt.IsZero() || sb.CreatedAt.IsZero() {
			continue
		}
		pe.sb.CreatedAt = sb.CreatedAt
		touched[pe.sb.key()] = true
		n++
	}
	for k := range touched {
		c.handoff(time.Time{}, k)
	}
	return n
}

// fillContainers reads CRI's status of every container the cache asked
// about and fills what NRI did not carry. A container gone meanwhile is
// dropped; one whose status failed otherwise is asked about again, and so
// is one whose CRI state is behind its NRI state (CRI-O reports a container
// CREATED for a while after NRI's PostStartContainer): it reports later.
func (r *Reconciler) fillContainers(ctx context.Context) (later bool, err error) {
	ids := r.cache.takeUnfilled()
	var failed, behindIDs []string
	var firstErr error
	n := 0
	for _, id := range ids {
		st, err := r.rt.ContainerStatus(ctx, id)
		if err != nil {
			if !errors.Is(err, ErrNotFound) {
				failed = append(failed, id)
				firstErr = cmp.Or(firstErr, fmt.Errorf("container %s status: %w", id, err))
			}
			continue
		}
		filled, behind := r.cache.fillFacts(st)
		if filled {
			n++
		}
		if behind {
			behindIDs = append(behindIDs, id)
		}
	}
	if n > 0 {
		r.log.Debug("Filled container facts from CRI", zap.Int("containers", n))
	}
	r.cache.retryUnfilled(append(failed, behindIDs...))
	return len(behindIDs) > 0, firstErr
}

// dater runs dateSandboxes and fillContainers when the cache asks,
// retrying a failed call with capped exponential backoff.
type dater struct {
	r     *Reconciler
	wait  time.Duration
	fails int
	retry <-chan time.Time
}

func (d *dater) run(ctx context.Context) {
	later, ferr := d.r.fillContainers(ctx)
	err := errors.Join(d.r.dateSandboxes(ctx), ferr)
	if err == nil || ctx.Err() != nil {
		d.wait, d.fails, d.retry = 0, 0, nil
		if later && ctx.Err() == nil {
			d.retry = d.r.clock.After(dateRetryMin)
		}
		return
	}
	d.fails++
	d.wait = min(max(2*d.wait, dateRetryMin), dateRetryMax)
	d.retry = d.r.clock.After(d.wait)
	if d.fails == 1 {
		d.r.log.Warn("Cannot read pod and container times from CRI yet, retrying", zap.Error(err))
	} else {
		d.r.log.Debug("Pod and container times: CRI failed", zap.Int("attempt", d.fails), zap.Error(err))
	}
}
