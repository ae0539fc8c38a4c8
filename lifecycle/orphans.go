package lifecycle

import (
	"time"

	"go.uber.org/zap"
)

// forgetOrphan drops a sandbox listed by a Synchronize (and not stopped
// through NRI since) once its last container that the runtime tracks is
// removed. After a runtime restart containerd sends no StopPodSandbox or
// RemovePodSandbox for sandboxes from before it, nor RemoveContainer for
// containers that had already exited (containerd #8426), so without this
// the pod would stay listed, ready, until the next reconcile. If the
// sandbox lives on, its next container event brings it back. The caller
// holds c.mu and hands the pod to the engine afterwards.
func (c *Cache) forgetOrphan(at time.Time, pe *podEntry) {
	if !pe.orphan {
		return
	}
	for _, ce := range pe.ctrs {
		if !ce.orphan {
			return
		}
	}
	c.removePod(at, pe.sb.ID)
	c.log.Debug("Forgot a pod whose removal the runtime will not announce",
		zap.String("pod", pe.sb.Namespace+"/"+pe.sb.Name), zap.String("sandboxID", pe.sb.ID))
}

// dropSuperseded forgets orphaned exited instances of cur's container that
// cur replaces: nobody will announce their removal, and the pod's snapshot
// shows only the newest instance, so they would only take memory.
func (c *Cache) dropSuperseded(pe *podEntry, cur *ctrEntry) {
	for id, ce := range pe.ctrs {
		if ce.orphan && ce.c.Name == cur.c.Name && newer(cur, ce) {
			delete(pe.ctrs, id)
			delete(c.ctrs, id)
		}
	}
}
