package lifecycle

import (
	"time"

	"github.com/probelet/probelet/node"
)

// SubscribeRuntimeEvents delivers every change the cache makes, container
// events and pod sandbox events (node.PodSandboxReadyEvent, ...), in the
// order it made them, numbered consecutively by Event.Seq. It is for consumers
// that must not miss a change (the CRI proxy's memo): the channel is
// buffered and never blocks the NRI handlers, so a subscriber that falls
// behind loses events, and sees it as a gap in Seq. cancel closes the
// channel.
func (c *Cache) SubscribeRuntimeEvents(buffer int) (<-chan node.Event, func()) {
	return c.runtimeEvents.Subscribe(buffer)
}

// emitRuntime publishes container events to the runtime subscribers;
// c.mu is held, so Seq follows the order of the changes.
func (c *Cache) emitRuntime(typ node.EventType, at time.Time, pe *podEntry, containerIDs ...string) {
	if len(containerIDs) == 0 || !c.runtimeEvents.Active() {
		return
	}
	pod := c.snapshot(pe)
	for _, id := range containerIDs {
		c.publishRuntime(node.Event{Type: typ, Time: at, PodUID: pe.sb.key(), SandboxID: pe.sb.ID, ContainerID: id, Pod: pod})
	}
}

// emitSandbox publishes a pod sandbox event to the runtime subscribers;
// c.mu is held.
func (c *Cache) emitSandbox(typ node.EventType, at time.Time, pe *podEntry) {
	if !c.runtimeEvents.Active() {
		return
	}
	c.publishRuntime(node.Event{Type: typ, Time: at, PodUID: pe.sb.key(), SandboxID: pe.sb.ID, Pod: c.snapshot(pe)})
}

func (c *Cache) publishRuntime(ev node.Event) {
	c.runtimeSeq++
	ev.Seq = c.runtimeSeq
	c.runtimeEvents.Publish(ev)
}
