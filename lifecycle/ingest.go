package lifecycle

import (
	"time"

	"github.com/probelet/probelet/node"
	"go.uber.org/zap"
)

// The methods below are the cache's input, called by the NRI plugin from
// its event handlers. at is when the event was received; the time until
// the engine has the new snapshot is recorded in
// probelet_lifecycle_event_to_worker_seconds. None of them blocks on I/O.

// RunPod records a new (or re-announced) pod sandbox.
func (c *Cache) RunPod(at time.Time, sb Sandbox) {
	if !c.validPod(sb.ID, "RunPodSandbox") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.upsertPod(sb)
	c.handoff(at, e.sb.key())
}

// StopPod marks a sandbox as being torn down: the engine then treats the
// pod as deleting (liveness and startup stop acting).
func (c *Cache) StopPod(at time.Time, sb Sandbox) {
	if !c.validPod(sb.ID, "StopPodSandbox") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.upsertPod(sb)
	e.stopped, e.orphan = true, false
	c.handoff(at, e.sb.key())
}

// RemovePod drops a sandbox and any containers still recorded in it.
func (c *Cache) RemovePod(at time.Time, sb Sandbox) {
	if !c.validPod(sb.ID, "RemovePodSandbox") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if pe := c.removePod(at, sb.ID); pe != nil {
		c.handoff(at, pe.sb.key())
	}
}

// UpdateContainer records a container's creation, start or stop. sb is the
// container's pod as the event carried it (may be zero when unknown).
func (c *Cache) UpdateContainer(at time.Time, sb Sandbox, ct Container) {
	if !c.validContainer(ct, "container event") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sb.ID == ct.SandboxID {
		c.upsertPod(sb)
	}
	pe, ce, typ, changed := c.upsertContainer(ct)
	if changed {
		c.emit(typ, at, pe, ce.c.ID)
	}
	c.handoff(at, pe.sb.key())
}

// RemoveContainer drops a container. Cleanup is per container because
// after a runtime restart pods created before it get no pod stop/remove
// events (containerd #8426): such a pod is dropped with its last container
// (see forgetOrphan).
func (c *Cache) RemoveContainer(at time.Time, ct Container) {
	if !c.validContainer(ct, "RemoveContainer") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pe, ce := c.removeContainer(ct.ID)
	if pe == nil {
		return
	}
	c.emit(node.ContainerDeletedEvent, at, pe, ce.c.ID)
	c.forgetOrphan(at, pe)
	c.handoff(at, pe.sb.key())
}

// validPod and validContainer reject events without the IDs the cache is
// keyed by; such an event is logged and ignored (it must never fail the
// runtime's operation).
func (c *Cache) validPod(id, what string) bool {
	if id != "" {
		return true
	}
	c.log.Warn("Ignoring pod event without a sandbox ID", zap.String("event", what))
	return false
}

func (c *Cache) validContainer(ct Container, what string) bool {
	if ct.ID != "" && ct.SandboxID != "" {
		return true
	}
	c.log.Warn("Ignoring container event without IDs", zap.String("event", what),
		zap.String("sandboxID", ct.SandboxID), zap.String("containerID", ct.ID),
		zap.String("container", ct.Name))
	return false
}

// handoff gives the engine the current snapshot of a pod (or removes the
// pod when no sandbox of it is left) and records the latency. It runs under
// c.mu, so snapshots reach the sink in the order they were made; the lock
// order is cache, then engine (Sink says so), never the reverse.
func (c *Cache) handoff(at time.Time, key string) {
	if cur := c.current(key); cur != nil {
		c.sink.UpdatePod(c.snapshot(cur))
	} else {
		c.sink.RemovePod(key)
	}
	c.observe(at)
}

func (c *Cache) observe(at time.Time) {
	if !at.IsZero() {
		c.m.handoff.Observe(c.clock.Since(at).Seconds())
	}
	c.m.pods.Set(float64(len(c.pods)))
	c.m.ctrs.Set(float64(len(c.ctrs)))
}

// emit publishes a lifecycle event per container with one snapshot of
// their pod.
func (c *Cache) emit(typ node.EventType, at time.Time, pe *podEntry, containerIDs ...string) {
	if len(containerIDs) == 0 || !c.events.Active() {
		return
	}
	pod := c.snapshot(pe)
	for _, id := range containerIDs {
		c.events.Publish(node.Event{
			Type:        typ,
			Time:        at,
			PodUID:      pe.sb.key(),
			SandboxID:   pe.sb.ID,
			ContainerID: id,
			Pod:         pod,
		})
	}
}
