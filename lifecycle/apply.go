package lifecycle

import (
	"time"

	"github.com/probelet/probelet/node"
)

// The helpers below mutate the cache; callers hold c.mu. Stored maps and
// slices are replaced, never modified, so snapshots stay valid.

// upsertPod records what a source says about a sandbox.
func (c *Cache) upsertPod(sb Sandbox) *podEntry {
	e, ok := c.pods[sb.ID]
	if !ok {
		c.seq++
		e = &podEntry{sb: sb, seq: c.seq, ctrs: map[string]*ctrEntry{}}
		c.pods[sb.ID] = e
		c.index(e)
	} else {
		merged := mergeSandbox(e.sb, sb)
		if merged.key() != e.sb.key() {
			c.unindex(e)
			e.sb = merged
			c.index(e)
		}
		e.sb = merged
	}
	e.seen = c.clock.Now()
	c.askDate(e)
	return e
}

// askDate tells the reconciler, without blocking, that a sandbox has no
// creation time (NRI does not carry it: pods learned from Synchronize, or
// from a container event before their own). Each sandbox is asked once.
func (c *Cache) askDate(e *podEntry) {
	if !e.sb.CreatedAt.IsZero() || e.dateAsked {
		return
	}
	e.dateAsked = true
	select {
	case c.undated <- struct{}{}:
	default: // a request is already pending; it covers this sandbox too
	}
}

// ensurePod returns the sandbox entry for id, creating a bare one when a
// container arrives before (or without) its pod.
func (c *Cache) ensurePod(id string) *podEntry {
	if e, ok := c.pods[id]; ok {
		return e
	}
	return c.upsertPod(Sandbox{ID: id})
}

func (c *Cache) index(e *podEntry) {
	k := e.sb.key()
	m := c.byKey[k]
	if m == nil {
		m = map[string]*podEntry{}
		c.byKey[k] = m
	}
	m[e.sb.ID] = e
}

func (c *Cache) unindex(e *podEntry) {
	k := e.sb.key()
	delete(c.byKey[k], e.sb.ID)
	if len(c.byKey[k]) == 0 {
		delete(c.byKey, k)
	}
}

// mergeSandbox lets newer information win, but keeps what the newer
// source does not know (NRI has no creation time; a stop may lack IPs).
func mergeSandbox(old, cur Sandbox) Sandbox {
	if cur.UID == "" {
		cur.UID = old.UID
	}
	if cur.Name == "" {
		cur.Name, cur.Namespace = old.Name, old.Namespace
	}
	if cur.CreatedAt.IsZero() {
		cur.CreatedAt = old.CreatedAt
	}
	if len(cur.Labels) == 0 {
		cur.Labels = old.Labels
	}
	if len(cur.Annotations) == 0 {
		cur.Annotations = old.Annotations
	}
	if len(cur.IPs) == 0 {
		cur.IPs = old.IPs
	}
	if cur.NetNSPath == "" {
		cur.NetNSPath = old.NetNSPath
	}
	if cur.Pid == 0 {
		cur.Pid = old.Pid
	}
	if old.Network != NetworkUnknown {
		// Fixed at creation; a late event may no longer see the
		// namespace (the runtime drops a torn-down one from its reports).
		cur.Network = old.Network
	}
	return cur
}

// upsertContainer records what a source says about a container and returns
// the lifecycle event the change amounts to, if any.
func (c *Cache) upsertContainer(ct Container) (*podEntry, *ctrEntry, node.EventType, bool) {
	pe := c.ensurePod(ct.SandboxID)
	ce, ok := c.ctrs[ct.ID]
	if !ok {
		c.seq++
		ce = &ctrEntry{c: ct.Container, sandboxID: ct.SandboxID, seq: c.seq, seen: c.clock.Now()}
		c.ctrs[ct.ID] = ce
		pe.ctrs[ct.ID] = ce
		c.dropSuperseded(pe, ce)
		c.askFacts(ce)
		return pe, ce, firstEvent(ct.State), true
	}
	old := ce.c.State
	ce.c = mergeContainer(ce.c, ct.Container)
	ce.seen = c.clock.Now()
	c.askFacts(ce)
	typ, changed := transition(old, ce.c.State)
	return c.pods[ce.sandboxID], ce, typ, changed
}

// mergeContainer keeps the state monotonic (created → running → exited; a
// container ID never runs twice, so a late event cannot revive it) and
// keeps fields the newer source does not carry.
func mergeContainer(old, cur node.Container) node.Container {
	if cur.State.Before(old.State) {
		cur.State = old.State
	}
	if cur.CreatedAt.IsZero() {
		cur.CreatedAt = old.CreatedAt
	}
	if cur.StartedAt.IsZero() {
		cur.StartedAt = old.StartedAt
	}
	if cur.State == node.StateExited {
		cur.Pid = 0
		if cur.FinishedAt.IsZero() {
			cur.FinishedAt = old.FinishedAt
			cur.ExitCode = old.ExitCode
		}
	} else if cur.Pid == 0 {
		cur.Pid = old.Pid
	}
	if cur.Name == "" {
		cur.Name = old.Name
	}
	if cur.Image == "" {
		cur.Image = old.Image
	}
	if len(cur.Labels) == 0 {
		cur.Labels = old.Labels
	}
	if len(cur.Annotations) == 0 {
		cur.Annotations = old.Annotations
	}
	return cur
}

// firstEvent is the event for a container seen for the first time.
func firstEvent(s node.ContainerState) node.EventType {
	switch s {
	case node.StateRunning:
		return node.ContainerStartedEvent
	case node.StateExited:
		return node.ContainerStoppedEvent
	}
	return node.ContainerCreatedEvent
}

// transition is the event a state change amounts to.
func transition(old, cur node.ContainerState) (node.EventType, bool) {
	if old == cur {
		return 0, false
	}
	switch cur {
	case node.StateRunning:
		return node.ContainerStartedEvent, true
	case node.StateExited:
		return node.ContainerStoppedEvent, true
	}
	return 0, false
}

// removeContainer drops a container; it reports the sandbox it was in.
func (c *Cache) removeContainer(id string) (*podEntry, *ctrEntry) {
	ce, ok := c.ctrs[id]
	if !ok {
		return nil, nil
	}
	delete(c.ctrs, id)
	delete(c.unfilled, id)
	pe := c.pods[ce.sandboxID]
	if pe != nil {
		delete(pe.ctrs, id)
	}
	c.tombstone(id)
	return pe, ce
}

// removePod drops a sandbox and its containers, announcing each
// container's deletion at at; it returns the sandbox (nil if unknown).
func (c *Cache) removePod(at time.Time, id string) *podEntry {
	pe, ok := c.pods[id]
	if !ok {
		return nil
	}
	gone := make([]string, 0, len(pe.ctrs))
	for cid := range pe.ctrs {
		delete(c.ctrs, cid)
		c.tombstone(cid)
		gone = append(gone, cid)
	}
	pe.ctrs = map[string]*ctrEntry{}
	delete(c.pods, id)
	c.unindex(pe)
	c.tombstone(id)
	c.emit(node.ContainerDeletedEvent, at, pe, gone...)
	return pe
}

func (c *Cache) tombstone(id string) {
	if c.trackRemovals {
		c.removed[id] = c.clock.Now()
	}
}
