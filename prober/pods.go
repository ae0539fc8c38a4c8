package prober

import (
	"maps"
	"reflect"
	"slices"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/spec"
	"go.uber.org/zap"
)

// podEntry is the engine's view of one pod: its latest state, its workers
// and the restarts its probes caused. A pod has a handful of workers, so a
// slice is smaller and as fast as a map.
type podEntry struct {
	pod node.Pod
	// spec is the pod's probes annotation, parsed (shared through the
	// Manager's memo; never nil once the pod was updated).
	spec     *spec.Parsed
	workers  []*worker
	restarts map[string][]Restart // nil until a probe restarts something
}

// worker returns the worker for container name and probe type t, or nil.
func (pe *podEntry) worker(name string, t probe.Type) *worker {
	for _, w := range pe.workers {
		if w.name == name && w.typ == t {
			return w
		}
	}
	return nil
}

// dropWorker forgets w.
func (pe *podEntry) dropWorker(w *worker) {
	pe.workers = slices.DeleteFunc(pe.workers, func(x *worker) bool { return x == w })
}

// container returns the pod's current container named name.
func (pe *podEntry) container(name string) (*node.Container, bool) {
	return pe.pod.Container(name)
}

// UpdatePod hands the engine a pod's current state (lifecycle.Sink). It is
// idempotent: workers are created for configured probes, stopped for
// containers that no longer exist, and woken when a container ID or state
// changes, so the first probe of a new container runs at once. The engine
// keeps pod as given: the caller must not modify it afterwards. It returns
// at once; the probes annotation is parsed here (once per distinct value),
// before the engine's lock is taken.
func (m *Manager) UpdatePod(pod node.Pod) {
	parsed := m.specs.Parse(pod.Annotations[spec.AnnotationProbes])
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.stopped {
		m.updatePodLocked(pod, parsed)
	}
}

// RemovePod stops the pod's workers and drops their results (lifecycle.Sink).
func (m *Manager) RemovePod(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if pe, ok := m.pods[uid]; ok {
		m.removePodLocked(pe)
	}
}

// SyncPods replaces the whole set of known pods (lifecycle.Sink): pods not
// listed are removed, listed ones are updated, results of surviving
// containers are kept.
func (m *Manager) SyncPods(pods []node.Pod) {
	parsed := make([]*spec.Parsed, len(pods))
	for i := range pods {
		parsed[i] = m.specs.Parse(pods[i].Annotations[spec.AnnotationProbes])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	keep := make(map[string]bool, len(pods))
	for _, p := range pods {
		keep[p.UID] = true
	}
	for uid, pe := range m.pods {
		if !keep[uid] {
			m.removePodLocked(pe)
		}
	}
	for i, p := range pods {
		m.updatePodLocked(p, parsed[i])
	}
}

func (m *Manager) updatePodLocked(pod node.Pod, parsed *spec.Parsed) {
	pe, known := m.pods[pod.UID]
	if !known {
		pe = &podEntry{}
		if m.history != nil {
			pe.restarts = m.history.Restarts(pod.UID)
		}
		m.pods[pod.UID] = pe
	}
	old := pe.pod
	pe.pod = pod
	if pe.spec == nil || pe.spec.Value != parsed.Value {
		m.specChanged(pe, parsed)
	}
	m.reindex(pe, old)
	m.stopVanished(pe)
	m.startConfigured(pe)
	m.wakeChanged(pe, known && netChanged(old, pod))
	if known && hasSpec(old) != hasSpec(pod) {
		pe.retarget()
	}
}

// hasSpec reports whether the API server gave p's spec, which exec
// targets expand $(VAR) from.
func hasSpec(p node.Pod) bool { return p.API != nil && p.API.Spec != nil }

// retarget makes every worker of pe prepare its target again at its next
// run: the spec its exec command expands from came (or went).
func (pe *podEntry) retarget() {
	for _, w := range pe.workers {
		w.target = nil
	}
}

// removePodLocked stops the pod's workers, drops their results and forgets it.
func (m *Manager) removePodLocked(pe *podEntry) {
	for _, w := range slices.Clone(pe.workers) {
		m.stopWorker(w)
	}
	for _, c := range pe.pod.Containers {
		if m.byID[c.ID] == pe {
			delete(m.byID, c.ID)
		}
	}
	delete(m.pods, pe.pod.UID)
}

// reindex keeps the container-ID index in step with the pod's containers.
func (m *Manager) reindex(pe *podEntry, old node.Pod) {
	for _, c := range old.Containers {
		if m.byID[c.ID] == pe {
			delete(m.byID, c.ID)
		}
	}
	for _, c := range pe.pod.Containers {
		if c.ID != "" {
			m.byID[c.ID] = pe
		}
	}
}

// stopVanished stops workers whose container or probe is gone, those
// whose probe spec changed (startConfigured replaces them), and those the
// pod spec, once known, says the container never gets (getsWorkers).
func (m *Manager) stopVanished(pe *podEntry) {
	for _, w := range slices.Clone(pe.workers) {
		_, hasContainer := pe.container(w.name)
		p := pe.spec.Probes[w.name].Get(w.typ)
		if !hasContainer || p == nil || !reflect.DeepEqual(p, w.spec) || !getsWorkers(pe.pod.API, w.name) {
			m.stopWorker(w)
		}
	}
}

// startConfigured creates a worker for every configured probe of every
// current container that gets workers (getsWorkers). A pod being deleted
// gets no new liveness or startup workers, and a container that exited for
// good none: those workers stopped, and recreating them would loop.
func (m *Manager) startConfigured(pe *podEntry) {
	for _, c := range pe.pod.Containers {
		if (c.State == node.StateExited && !restartsAfterExit(&pe.pod, &c)) || !getsWorkers(pe.pod.API, c.Name) {
			continue
		}
		cp := pe.spec.Probes[c.Name]
		for _, t := range probe.Types {
			p := cp.Get(t)
			if p == nil || pe.worker(c.Name, t) != nil || (pe.pod.Deleting && t != probe.Readiness) {
				continue
			}
			w := m.newWorker(pe, c.Name, t, p)
			pe.workers = append(pe.workers, w)
			m.scheduleFirst(w)
		}
	}
}

// wakeChanged wakes each worker whose container ID or state changed, whose
// pod started deleting or got new addresses, so it acts at once instead of
// at its next tick. A container that is merely created has nothing to
// probe yet; the worker wakes when it runs.
func (m *Manager) wakeChanged(pe *podEntry, netChanged bool) {
	for _, w := range pe.workers {
		if netChanged {
			w.target = nil // prepared for the old addresses
		}
		c, ok := pe.container(w.name)
		if !ok {
			continue
		}
		changed := c.ID != w.seenID || c.State != w.seenState || netChanged
		deleting := pe.pod.Deleting != w.seenDeleting
		w.seenID, w.seenState, w.seenDeleting = c.ID, c.State, pe.pod.Deleting
		if (changed && c.State != node.StateCreated) || deleting {
			m.wake(w)
		}
	}
}

// netChanged reports whether the pod's addresses changed, which changes
// probe targets.
func netChanged(old, cur node.Pod) bool {
	return old.NetNSPath != cur.NetNSPath || !slices.Equal(old.IPs, cur.IPs)
}

// stopWorker stops w: it is unscheduled, its in-flight probe is cancelled,
// its result and metric series are dropped. Stopping twice is a no-op.
func (m *Manager) stopWorker(w *worker) {
	if w.stopped {
		return
	}
	w.stopped = true
	w.cancel()
	m.queue.forget(w)
	w.pod.dropWorker(w)
	if w.containerID != "" {
		m.cache.Remove(w.key())
	}
	w.metrics.forget()
}

// specChanged takes the pod's newly parsed annotation and reports, once per
// new value, every container whose probes were rejected: that container
// runs unprobed, the others are not disturbed.
func (m *Manager) specChanged(pe *podEntry, parsed *spec.Parsed) {
	pe.spec = parsed
	for _, name := range slices.Sorted(maps.Keys(parsed.Errors)) {
		m.log.Warn("Invalid probe spec",
			zap.String("pod", pe.pod.Namespace+"/"+pe.pod.Name), zap.String("podUID", pe.pod.UID),
			zap.String("container", name), zap.String("error", parsed.Errors[name]))
	}
}
