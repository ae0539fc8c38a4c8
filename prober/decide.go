package prober

import (
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
)

// verdict is what a worker's tick concluded.
type verdict int

const (
	// verdictWait: nothing to probe now; tick again next period.
	verdictWait verdict = iota
	// verdictProbe: run the probe.
	verdictProbe
	// verdictStop: the worker is done.
	verdictStop
)

// restartGrace is how long before the agent started a container must have
// started to count as running across an agent restart (the kubelet's
// kubeletRestartGracePeriod).
const restartGrace = 10 * time.Second

// decide applies the kubelet's rules that come before a probe, in the
// kubelet's order: follow the container, pod deletion (liveness and
// startup), on hold, not running, initial delay, startup gating.
func (m *Manager) decide(w *worker, now time.Time) verdict {
	c, ok := w.pod.container(w.name)
	if !ok || c.ID == "" || c.State == node.StateCreated {
		return verdictWait // not there yet; UpdatePod wakes the worker
	}
	m.follow(w, c)
	switch {
	case w.pod.pod.Deleting && w.typ != probe.Readiness:
		m.quietShutdown(w, c)
		return verdictStop
	case w.onHold:
		return verdictWait
	case c.State != node.StateRunning:
		m.publish(w, results.Failure, "")
		return verdictWait
	case inInitialDelay(w.spec, w.startedAt(c, now), now):
		return verdictWait
	case !m.gateOpen(w, c):
		return verdictWait
	}
	return verdictProbe
}

// quietShutdown is the kubelet's pod-deletion rule for liveness and
// startup: a worker that would probe sets Success for a quiet shutdown;
// one on hold or whose container is not running just stops (the kubelet's
// StopLivenessAndStartup stops every such worker).
func (m *Manager) quietShutdown(w *worker, c *node.Container) {
	if w.onHold || c.State != node.StateRunning {
		m.log.Debug("Pod deletion requested, stopping probe worker", m.fields(w)...)
		return
	}
	m.log.Debug("Pod deletion requested, setting probe result to success", m.fields(w)...)
	m.publish(w, results.Success, "")
}

// follow moves w to c when c is a new container: the old result goes, the
// type's initial value is seeded and a hold is lifted.
func (m *Manager) follow(w *worker, c *node.Container) {
	if w.containerID == c.ID {
		return
	}
	if w.containerID != "" {
		m.cache.Remove(w.key())
	}
	w.containerID = c.ID
	w.onHold = false
	w.seenRunning = time.Time{}
	// The last run belonged to the old container; its output would read as
	// the new one's. History keeps it, with its time.
	w.lastProbe, w.lastOutput, w.method = time.Time{}, "", ""
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
	return c.State == node.StateRunning && !c.StartedAt.IsZero() &&
		c.StartedAt.Before(m.agentStart.Add(-restartGrace))
}

// inInitialDelay reports whether fewer whole seconds than the probe's
// initialDelaySeconds have passed since the container started. Integer
// division truncates like the kubelet's int32(Seconds()), without its
// float overflow, which made a zero start time look like -2^31 seconds.
func inInitialDelay(p *corev1.Probe, startedAt, now time.Time) bool {
	return int64(now.Sub(startedAt)/time.Second) < int64(p.InitialDelaySeconds)
}

// startedAt is c's start time for the initial delay. The runtime may not
// know it (NRI sends 0); then the delay counts from when the worker first
// saw c run, so a liveness probe never starts early.
func (w *worker) startedAt(c *node.Container, now time.Time) time.Time {
	if !c.StartedAt.IsZero() {
		return c.StartedAt
	}
	if w.seenRunning.IsZero() {
		w.seenRunning = now
	}
	return w.seenRunning
}

// gateOpen applies startup gating: liveness and readiness probe only once
// the container has started; the startup probe only until then.
func (m *Manager) gateOpen(w *worker, c *node.Container) bool {
	started := m.started(w.pod, c)
	if w.typ == probe.Startup {
		return !started
	}
	return started
}

// started reports whether c has started: its startup probe succeeded, or
// it has none. The caller checks that c runs.
func (m *Manager) started(pe *podEntry, c *node.Container) bool {
	if pe.worker(c.Name, probe.Startup) == nil {
		return true
	}
	r, ok := m.cache.Get(results.Key{ContainerID: c.ID, Type: probe.Startup})
	return ok && r == results.Success
}

// publish sets w's published result and tells subscribers when it changed.
// A startup success wakes the container's readiness worker, so readiness
// follows at once (the kubelet triggers it manually).
func (m *Manager) publish(w *worker, r results.Result, output string) {
	if !m.cache.Set(w.key(), r) {
		return
	}
	pod := &w.pod.pod
	m.changes.publish(ResultChange{
		Time: m.clock.Now(), PodUID: pod.UID, PodName: pod.Name, PodNamespace: pod.Namespace,
		ContainerName: w.name, ContainerID: w.containerID, Type: w.typ, Result: r, Output: output,
	})
	if w.typ == probe.Startup && r == results.Success {
		if rw := w.pod.worker(w.name, probe.Readiness); rw != nil {
			m.wake(rw)
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
