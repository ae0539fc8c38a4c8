// Package lifecycle is probelet's event-driven replacement for the kubelet's
// PLEG: the node's pod/container cache, fed by NRI events, and the lifecycle
// events derived from them.
package lifecycle

import "github.com/probelet/probelet/node"

// View is the read side of the node cache, served on probelet's socket.
type View interface {
	// Pods returns snapshots of every known pod with its containers.
	Pods() []node.Pod
	// SubscribeEvents delivers lifecycle events as they happen. The channel
	// is buffered; a subscriber that falls behind loses events (counted),
	// it never blocks the NRI handlers. cancel closes the channel.
	SubscribeEvents(buffer int) (events <-chan node.Event, cancel func())
}

// Sink is what the cache drives with every change: the probe engine
// (prober.Manager). All calls must return at once, without I/O. The cache
// calls them while holding its own lock, so a sink sees a pod's snapshots
// in the order the cache made them; a sink must therefore never call back
// into the cache (lock order: cache, then sink).
type Sink interface {
	// UpdatePod hands over a pod's current snapshot.
	UpdatePod(pod node.Pod)
	// RemovePod says that no sandbox of the pod is left.
	RemovePod(uid string)
	// SyncPods replaces the whole set of known pods (after an NRI
	// Synchronize): pods not listed are gone.
	SyncPods(pods []node.Pod)
}
