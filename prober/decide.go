package prober

import (
	"time"

	"go.uber.org/zap"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// restartGrace is how long before the agent started a container must have
// started to count as running across an agent restart (the kubelet's
// kubeletRestartGracePeriod).
const restartGrace = 10 * time.Second

// decide runs w's rules for one tick and carries out what they decided:
// follow the container, then the worker's decide.
func (m *Manager) decide(w *worker, now time.Time) verdict {
	c, ok := w.pod.container(w.name)
	if !ok || c.ID == "" || c.State == node.StateCreated {
		return verdictWait // not there yet; UpdatePod wakes the worker
	}
	m.follow(w, c, now)
	if !w.seedDue.IsZero() {
		m.settleSeed(w, c, now)
	}
	d := w.decide(c, w.pod.pod.Deleting, m.reg.started(w.pod, c), restartsAfterExit(&w.pod.pod, c), now)
	if d.note != "" {
		m.log.Debug(d.note, m.fields(w)...)
	}
	if d.publishes {
		m.publish(w, d.result, "")
	}
	return d.verdict
}

// follow moves w to c when c is a new container: the old result goes and
// the type's initial value is seeded, or, when the runtime has not told c's
// start time yet, the seed waits for it (settleSeed).
func (m *Manager) follow(w *worker, c *node.Container, now time.Time) {
	left, moved := w.follow(c)
	if !moved {
		return
	}
	if w.pending != nil && w.pending.containerID != c.ID {
		w.pending.cancel() // a kill for the instance that is gone
	}
	if left.ContainerID != "" {
		m.reg.cache.Remove(left)
	}
	if c.Running() && c.StartedAt.IsZero() {
		w.seedDue = now
		return
	}
	if m.startedBeforeAgent(c) {
		// Like the kubelet after its own restart: do not flip a container
		// that was already running (and maybe Ready) back to the seed.
		m.log.Debug("Container predates the agent, not seeding", m.fields(w)...)
		return
	}
	m.publish(w, w.initialValue(), "")
}

// settleSeed seeds w once c's start time is known, unless c predates the
// agent. CRI-O's NRI (1.34) carries no start time: the lifecycle cache
// reads it from CRI within milliseconds, and seeding before that would flip
// every container that ran across a restart of probelet. A start time still
// unknown after restartGrace counts as new; a result of the worker's own
// meanwhile makes the seed moot.
func (m *Manager) settleSeed(w *worker, c *node.Container, now time.Time) {
	switch {
	case !c.StartedAt.IsZero():
		w.seedDue = time.Time{}
		if m.startedBeforeAgent(c) {
			m.log.Debug("Container predates the agent, not seeding", m.fields(w)...)
			return
		}
	case now.Sub(w.seedDue) >= restartGrace:
		w.seedDue = time.Time{}
		m.log.Debug("Container start time still unknown, seeding as new", m.fields(w)...)
	default:
		return
	}
	m.publish(w, w.initialValue(), "")
}

// startedBeforeAgent reports whether c was running well before the agent
// started, i.e. the agent restarted under it.
func (m *Manager) startedBeforeAgent(c *node.Container) bool {
	return c.Running() && !c.StartedAt.IsZero() && c.StartedAt.Before(m.agentStart.Add(-restartGrace))
}

// started reports whether c has started: its startup probe succeeded, or
// it has none. The caller checks that c runs.
func (r *registry) started(pe *podEntry, c *node.Container) bool {
	if pe.worker(c.Name, probespec.Startup) == nil {
		return true
	}
	res, ok := r.cache.Get(results.Key{ContainerID: c.ID, Type: probespec.Startup})
	return ok && res == results.Success
}

// publish sets w's published result and tells subscribers when it changed.
// A startup success wakes the container's readiness worker, so readiness
// follows at once (the kubelet triggers it manually).
func (m *Manager) publish(w *worker, r results.Result, output string) {
	w.seedDue = time.Time{} // a result, seed or run, settles a waiting seed
	if !m.reg.cache.Set(w.key(), r) {
		return
	}
	pod := &w.pod.pod
	m.changes.Publish(ResultChange{
		Time: m.clock.Now(), PodUID: pod.UID, PodName: pod.Name, PodNamespace: pod.Namespace,
		ContainerName: w.name, ContainerID: w.containerID, Type: w.typ, Result: r, Output: output,
	})
	if w.typ == probespec.Startup && r == results.Success {
		if rw := w.pod.worker(w.name, probespec.Readiness); rw != nil {
			m.sched.wake(rw)
		}
	}
}

// fields are the log fields naming w's probe, pod and container.
func (m *Manager) fields(w *worker, extra ...zap.Field) []zap.Field {
	pod := &w.pod.pod
	return append([]zap.Field{
		zap.String("probeType", w.typ.String()),
		zap.String("pod", pod.Namespace+"/"+pod.Name),
		zap.String("podUID", pod.UID),
		zap.String("containerName", w.name),
	}, extra...)
}
