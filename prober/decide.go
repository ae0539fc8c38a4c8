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
	m.follow(w, c)
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
// the type's initial value is seeded.
func (m *Manager) follow(w *worker, c *node.Container) {
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
	if m.startedBeforeAgent(c) {
		// Like the kubelet after its own restart: do not flip a container
		// that was already running (and maybe Ready) back to the seed.
		m.log.Debug("Container predates the agent, not seeding", m.fields(w)...)
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
