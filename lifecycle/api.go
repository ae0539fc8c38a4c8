package lifecycle

import (
	"time"

	"github.com/probelet/probelet/node"
)

// SetAPIPod records what the API server says about the pod with uid, or
// with a nil p that the API server no longer has it, and hands the pod to
// the engine again when the runtime knows it. The API only adds to what
// the runtime reports: a pod the runtime does not run is not created.
func (c *Cache) SetAPIPod(at time.Time, uid string, p *node.APIPod) {
	if uid == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p == nil {
		delete(c.api, uid)
	} else {
		c.api[uid] = p
	}
	if c.current(uid) != nil {
		c.handoff(at, uid)
	}
}

// withAPI completes a snapshot with what the API server says. The caller
// holds c.mu.
func (c *Cache) withAPI(pod *node.Pod) {
	a := c.api[pod.UID]
	if a == nil {
		return
	}
	pod.API = a
	if !a.DeletionTimestamp.IsZero() {
		pod.Deleting = true
	}
	if a.Spec != nil && a.Spec.TerminationGracePeriodSeconds != nil {
		pod.TerminationGracePeriodSeconds = a.Spec.TerminationGracePeriodSeconds
	}
}
