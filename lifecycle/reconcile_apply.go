package lifecycle

import (
	"time"

	"github.com/probelet/probelet/node"
)

// plan is what a CRI listing says differs from the cache.
type plan struct {
	vanishedPods, stoppedPods, missingPods []string
	vanishedCtrs, missingCtrs, changedCtrs []string
	// sandboxOf is each listed container's sandbox, for status answers
	// that do not say.
	sandboxOf map[string]string
}

// fetched holds the full details of the items a plan adds or updates.
type fetched struct {
	pods []Sandbox
	ctrs []Container
}

// inventory is the narrow view of the cache a reconcile plans from: per
// cached item, its state and when the cache last heard of it, and the IDs
// removed recently (a listing taken before their removal still shows them).
type inventory struct {
	pods    map[string]podMark // by sandbox ID
	ctrs    map[string]ctrMark // by container ID
	removed map[string]bool
}

type podMark struct {
	stopped bool
	seen    time.Time
}

type ctrMark struct {
	state node.ContainerState
	seen  time.Time
}

// inventory copies what a reconcile needs, so planning holds no lock.
func (c *Cache) inventory() inventory {
	c.mu.Lock()
	defer c.mu.Unlock()
	inv := inventory{
		pods:    make(map[string]podMark, len(c.pods)),
		ctrs:    make(map[string]ctrMark, len(c.ctrs)),
		removed: make(map[string]bool, len(c.removed)),
	}
	for id, pe := range c.pods {
		inv.pods[id] = podMark{stopped: pe.stopped, seen: pe.seen}
	}
	for id, ce := range c.ctrs {
		inv.ctrs[id] = ctrMark{state: ce.c.State, seen: ce.seen}
	}
	for id := range c.removed {
		inv.removed[id] = true
	}
	return inv
}

// applyPlan fixes the differences that still hold (events may have arrived
// since the listing), tells the engine, and counts the drift.
func (c *Cache) applyPlan(start time.Time, p plan, f fetched) Drift {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := Drift{}
	touched := map[string]bool{}
	c.applyPods(start, p, f, d, touched)
	c.applyContainers(start, p, f, d, touched)
	for k := range touched {
		c.handoff(time.Time{}, k)
	}
	for kind, n := range d {
		c.m.drift.WithLabelValues(kind).Add(float64(n))
	}
	return d
}

func (c *Cache) applyPods(start time.Time, p plan, f fetched, d Drift, touched map[string]bool) {
	for _, id := range p.vanishedPods {
		if pe := c.pods[id]; pe == nil || !pe.seen.Before(start) {
			continue
		}
		pe := c.removePod(start, id)
		touched[pe.sb.key()] = true
		d[DriftPodVanished]++
	}
	for _, id := range p.stoppedPods {
		if pe := c.pods[id]; pe != nil && !pe.stopped && pe.seen.Before(start) {
			pe.stopped = true
			touched[pe.sb.key()] = true
			d[DriftPodState]++
		}
	}
	for _, sb := range f.pods {
		if _, ok := c.pods[sb.ID]; ok || c.wasRemoved(sb.ID) || sb.ID == "" {
			continue
		}
		touched[c.upsertPod(sb).sb.key()] = true
		d[DriftPodMissing]++
	}
}

func (c *Cache) applyContainers(start time.Time, p plan, f fetched, d Drift, touched map[string]bool) {
	for _, id := range p.vanishedCtrs {
		if ce := c.ctrs[id]; ce == nil || !ce.seen.Before(start) {
			continue
		}
		pe, ce := c.removeContainer(id)
		if pe != nil {
			c.emit(node.ContainerDeletedEvent, start, pe, ce.c.ID)
			touched[pe.sb.key()] = true
		}
		d[DriftContainerVanished]++
	}
	for _, ct := range f.ctrs {
		ce, known := c.ctrs[ct.ID]
		if (known && !ce.seen.Before(start)) || (!known && c.wasRemoved(ct.ID)) || ct.ID == "" || ct.SandboxID == "" {
			continue
		}
		pe, ce, typ, changed := c.upsertContainer(ct)
		if !changed {
			continue
		}
		c.emit(typ, start, pe, ce.c.ID)
		touched[pe.sb.key()] = true
		if known {
			d[DriftContainerState]++
		} else {
			d[DriftContainerMissing]++
		}
	}
}

func (c *Cache) wasRemoved(id string) bool {
	_, ok := c.removed[id]
	return ok
}

// pruneTombstones forgets removals older than a listing that started at
// start: later listings cannot contain them.
func (c *Cache) pruneTombstones(start time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, t := range c.removed {
		if t.Before(start) {
			delete(c.removed, id)
		}
	}
}
