package lifecycle

import (
	"sort"
	"time"

	"github.com/probelet/probelet/node"
)

// Sync replaces the cache's content with a full listing from the runtime,
// as NRI's Synchronize delivers after every (re)connect: sandboxes and
// live containers that are not listed are dropped, listed ones are
// recorded, and the engine gets the whole set in one SyncPods call so it
// keeps the results of containers that still exist. Exited containers of
// surviving sandboxes are kept: NRI never lists exited containers.
func (c *Cache) Sync(at time.Time, sbs []Sandbox, ctrs []Container) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropUnlisted(at, sbs, ctrs)
	for _, sb := range sbs {
		if c.validPod(sb.ID, "Synchronize") {
			c.upsertPod(sb).orphan = true
		}
	}
	for _, ct := range ctrs {
		if !c.validContainer(ct, "Synchronize") {
			continue
		}
		if pe, ce, typ, changed := c.upsertContainer(ct); changed {
			c.emit(typ, at, pe, ce.c.ID)
		}
	}
	c.sink.SyncPods(c.allCurrent())
	c.observe(at)
}

// dropUnlisted removes what a full listing no longer contains.
func (c *Cache) dropUnlisted(at time.Time, sbs []Sandbox, ctrs []Container) {
	pods := make(map[string]bool, len(sbs))
	for _, sb := range sbs {
		pods[sb.ID] = true
	}
	live := make(map[string]bool, len(ctrs))
	for _, ct := range ctrs {
		live[ct.ID] = true
	}
	for id := range c.pods {
		if !pods[id] {
			c.removePod(at, id)
		}
	}
	for id, ce := range c.ctrs {
		if live[id] {
			continue
		}
		if ce.c.State == node.StateExited {
			ce.orphan = true
			continue
		}
		if pe, ce := c.removeContainer(id); pe != nil {
			c.emit(node.ContainerDeletedEvent, at, pe, ce.c.ID)
		}
	}
}

// allCurrent returns the engine's view of every pod, sorted by UID.
func (c *Cache) allCurrent() []node.Pod {
	keys := make([]string, 0, len(c.byKey))
	for k := range c.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]node.Pod, 0, len(keys))
	for _, k := range keys {
		out = append(out, c.snapshot(c.current(k)))
	}
	return out
}
