package lifecycle

import (
	"time"

	"github.com/probelet/probelet/node"
)

// lacksFacts reports whether c misses a fact of its state that CRI's
// status has: containerd's NRI carries the container's times, exit code and
// pid; CRI-O's (1.34) carries none of them.
func lacksFacts(c node.Container) bool {
	switch c.State {
	case node.StateRunning:
		return c.StartedAt.IsZero() || c.Pid == 0
	case node.StateExited:
		return c.FinishedAt.IsZero()
	}
	return c.CreatedAt.IsZero()
}

// askFacts tells the reconciler, without blocking, that ce lacks facts of
// its state. Each container is asked once per state.
func (c *Cache) askFacts(ce *ctrEntry) {
	if !lacksFacts(ce.c) || (ce.askedFacts && ce.factsAsked == ce.c.State) {
		return
	}
	ce.askedFacts, ce.factsAsked = true, ce.c.State
	c.unfilled[ce.c.ID] = true
	select {
	case c.undated <- struct{}{}:
	default: // a request is already pending; it covers this container too
	}
}

// takeUnfilled returns the containers to read facts for and forgets them.
func (c *Cache) takeUnfilled() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, 0, len(c.unfilled))
	for id := range c.unfilled {
		ids = append(ids, id)
	}
	clear(c.unfilled)
	return ids
}

// retryUnfilled puts back containers whose status could not be read.
func (c *Cache) retryUnfilled(ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if _, ok := c.ctrs[id]; ok {
			c.unfilled[id] = true
		}
	}
}

// fillFacts sets what the cached container lacks from CRI's status of it
// and hands its pod to the engine again: the times (an initial delay and a
// restart of probelet count from the start), the exit code of an exit, the
// pid of a running container. It never changes the state, which events
// and the reconcile own. It is not drift: NRI never carried these. behind
// says CRI's state is behind the cache's, so facts are still missing: ask
// again later.
func (c *Cache) fillFacts(st Container) (filled, behind bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ce, ok := c.ctrs[st.ID]
	if !ok {
		return false, false
	}
	cur := ce.c
	fill := func(dst *time.Time, src time.Time) {
		if dst.IsZero() && !src.IsZero() {
			*dst, filled = src, true
		}
	}
	fill(&cur.CreatedAt, st.CreatedAt)
	if cur.Image == "" && st.Image != "" {
		cur.Image, filled = st.Image, true
	}
	if cur.State != node.StateCreated {
		fill(&cur.StartedAt, st.StartedAt)
	}
	if cur.State == node.StateExited && st.State == node.StateExited && cur.FinishedAt.IsZero() && !st.FinishedAt.IsZero() {
		cur.FinishedAt, cur.ExitCode, filled = st.FinishedAt, st.ExitCode, true
	}
	if cur.State == node.StateRunning && st.State == node.StateRunning && cur.Pid == 0 && st.Pid != 0 {
		cur.Pid, filled = st.Pid, true
	}
	behind = st.State.Before(cur.State) && lacksFacts(cur)
	if !filled {
		return false, behind
	}
	ce.c = cur
	if pe := c.pods[ce.sandboxID]; pe != nil {
		c.handoff(time.Time{}, pe.sb.key())
	}
	return true, behind
}
