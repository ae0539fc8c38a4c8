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

// plan compares a listing taken at start with the cache. Only live items
// count as missing: the cache never learns exited containers from NRI.
func (c *Cache) plan(start time.Time, sbs []ListedSandbox, ctrs []Container) plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := plan{sandboxOf: make(map[string]string, len(ctrs))}
	listed := make(map[string]bool, len(sbs)+len(ctrs))
	for _, sb := range sbs {
		listed[sb.ID] = true
		pe, ok := c.pods[sb.ID]
		switch {
		case !ok && sb.Ready && !c.wasRemoved(sb.ID):
			p.missingPods = append(p.missingPods, sb.ID)
		case ok && !sb.Ready && !pe.stopped && pe.seen.Before(start):
			p.stoppedPods = append(p.stoppedPods, sb.ID)
		}
	}
	for id, pe := range c.pods {
		if !listed[id] && pe.seen.Before(start) {
			p.vanishedPods = append(p.vanishedPods, id)
		}
	}
	for _, ct := range ctrs {
		listed[ct.ID] = true
		p.sandboxOf[ct.ID] = ct.SandboxID
		ce, ok := c.ctrs[ct.ID]
		switch {
		case !ok && ct.State != node.StateExited && !c.wasRemoved(ct.ID):
			p.missingCtrs = append(p.missingCtrs, ct.ID)
		case ok && ce.c.State.Before(ct.State) && ce.seen.Before(start):
			p.changedCtrs = append(p.changedCtrs, ct.ID)
		}
	}
	for id, ce := range c.ctrs {
		if !listed[id] && ce.seen.Before(start) {
			p.vanishedCtrs = append(p.vanishedCtrs, id)
		}
	}
	return p
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
