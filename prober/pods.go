package prober

import (
	"reflect"
	"slices"

	"go.uber.org/zap"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

// podEntry is the engine's view of one pod: its latest state, its workers
// and the restarts its probes caused. A pod has a handful of workers, so a
// slice is smaller and as fast as a map.
type podEntry struct {
	pod node.Pod
	// checked is the probes the pod was created with: its sandbox's
	// annotation, parsed (shared through the Manager's memo), then checked
	// against the pod spec once the API server gave it (specChecked).
	// spec is checked with the pod's host scope applied (applyHosts): the
	// probes in force. Neither is nil once the pod was updated.
	checked, spec *probespec.Parsed
	// specFixed is set once a snapshot carried the sandbox's annotations:
	// from then on spec changes no more, as the kubelet keeps a pod's
	// probes for its life.
	specFixed   bool
	specChecked bool
	// specChangeTold is set once a change of the API object's annotation
	// was reported.
	specChangeTold bool
	workers        []*worker
	restarts       map[string][]Restart // nil until a probe restarts something
	// net is the pod's network namespace for probes from its origin,
	// made when a target first wants it, pinned by a run (origin.go).
	net *podNet
	// badOriginTold is set once an invalid probelet.io/probe-origin was
	// logged.
	badOriginTold bool
}

// worker returns the worker for container name and probe type t, or nil.
func (pe *podEntry) worker(name string, t probespec.Type) *worker {
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
// before the engine's lock is taken, and only for a pod whose probes are
// not fixed yet.
func (m *Manager) UpdatePod(pod node.Pod) {
	var parsed *probespec.Parsed
	if !m.specFixed(pod.UID) {
		parsed = m.specs.Parse(pod.Annotations[probespec.AnnotationProbes])
	}
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
	if pe, ok := m.reg.pods[uid]; ok {
		m.removePodLocked(pe)
	}
}

// SyncPods replaces the whole set of known pods (lifecycle.Sink): pods not
// listed are removed, listed ones are updated, results of surviving
// containers are kept.
func (m *Manager) SyncPods(pods []node.Pod) {
	parsed := make([]*probespec.Parsed, len(pods))
	for i := range pods {
		if !m.specFixed(pods[i].UID) {
			parsed[i] = m.specs.Parse(pods[i].Annotations[probespec.AnnotationProbes])
		}
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
	for uid, pe := range m.reg.pods {
		if !keep[uid] {
			m.removePodLocked(pe)
		}
	}
	for i, p := range pods {
		m.updatePodLocked(p, parsed[i])
	}
}

func (m *Manager) updatePodLocked(pod node.Pod, parsed *probespec.Parsed) {
	pe, known := m.reg.pods[pod.UID]
	if !known {
		pe = &podEntry{}
		if m.history != nil {
			pe.restarts = m.history.Restarts(pod.UID)
		}
		m.reg.pods[pod.UID] = pe
	}
	old := pe.pod
	pe.pod = pod
	m.takeSpec(pe, parsed)
	m.reg.reindex(pe, old)
	m.stopVanished(pe)
	m.startConfigured(pe)
	m.wakeChanged(pe, known && (netChanged(old, pod) || m.scopeChanged(pe, old)))
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
		if m.reg.byID[c.ID] == pe {
			delete(m.reg.byID, c.ID)
		}
	}
	delete(m.reg.pods, pe.pod.UID)
	if pe.net != nil {
		// Off the engine's lock: it may wait for a pin in progress, and
		// closing the namespace is a system call.
		go pe.net.close()
	}
}

// reindex keeps the container-ID index in step with the pod's containers.
func (r *registry) reindex(pe *podEntry, old node.Pod) {
	for _, c := range old.Containers {
		if r.byID[c.ID] == pe {
			delete(r.byID, c.ID)
		}
	}
	for _, c := range pe.pod.Containers {
		if c.ID != "" {
			r.byID[c.ID] = pe
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
		for _, t := range probespec.Types {
			p := cp.Get(t)
			if p == nil || pe.worker(c.Name, t) != nil || (pe.pod.Deleting && t != probespec.Readiness) {
				continue
			}
			w := m.newWorker(pe, c.Name, t, p)
			pe.workers = append(pe.workers, w)
			m.sched.scheduleFirst(w)
		}
	}
}

// wakeChanged wakes each worker whose container ID or state changed, or
// whose pod started deleting or got new addresses (or host exceptions), so
// it acts at once instead of at its next tick. A container that is merely
// created has nothing to probe yet; the worker wakes when it runs. A start
// time that came settles a seed waiting for it without a probe: a run in
// flight settles it with its own result, and waking it would run it again
// at once, off its period's grid.
func (m *Manager) wakeChanged(pe *podEntry, netChanged bool) {
	for _, w := range pe.workers {
		if netChanged {
			w.target = nil // prepared for the old addresses or scope
		}
		c, ok := pe.container(w.name)
		if !ok {
			continue
		}
		changed := c.ID != w.seenID || c.State != w.seenState || netChanged
		deleting := pe.pod.Deleting != w.seenDeleting
		w.seenID, w.seenState, w.seenDeleting = c.ID, c.State, pe.pod.Deleting
		if (changed && c.State != node.StateCreated) || deleting {
			m.sched.wake(w)
			continue
		}
		if !w.seedDue.IsZero() && !c.StartedAt.IsZero() && c.ID == w.containerID && !w.inFlight {
			m.settleSeed(w, c, m.clock.Now())
		}
	}
}

// netChanged reports whether the pod's addresses (or its sandbox, whose
// namespace pod-origin probes come from) changed, which changes probe
// targets.
func netChanged(old, cur node.Pod) bool {
	return old.NetNSPath != cur.NetNSPath || old.SandboxID != cur.SandboxID || !slices.Equal(old.IPs, cur.IPs)
}

// stopWorker stops w: it is unscheduled, its in-flight probe is cancelled,
// its result and metric series are dropped. Stopping twice is a no-op.
func (m *Manager) stopWorker(w *worker) {
	if w.stopped {
		return
	}
	w.stopped = true
	w.cancel()
	m.sched.forget(w)
	w.pod.dropWorker(w)
	if w.containerID != "" {
		m.reg.cache.Remove(w.key())
	}
	w.metrics.forget()
}

// specFixed reports whether the pod's probes are fixed, so its annotation
// need not be parsed again.
func (m *Manager) specFixed(uid string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	pe, ok := m.reg.pods[uid]
	return ok && pe.specFixed
}

// takeSpec keeps the probes the pod was created with. The sandbox's
// annotation (parsed, nil when the probes were fixed before the lock was
// taken) fixes them once a snapshot carries the sandbox's annotations; the
// runtime never changes them. The pod spec, once the API server gives it,
// is applied once (spec.Parsed.ForPod: what `probelet validate` checks). A
// later change of the API object's annotation changes nothing and is
// reported once.
func (m *Manager) takeSpec(pe *podEntry, parsed *probespec.Parsed) {
	old := pe.spec
	if !pe.specFixed && parsed == nil {
		// Fixed when UpdatePod looked, removed and back since: rare.
		parsed = m.specs.Parse(pe.pod.Annotations[probespec.AnnotationProbes])
	}
	if !pe.specFixed && (pe.checked == nil || pe.checked.Value != parsed.Value) {
		pe.checked, pe.specChecked = parsed, false
	}
	pe.specFixed = pe.specFixed || len(pe.pod.Annotations) > 0
	if a := pe.pod.API; !pe.specChecked && a != nil && a.Spec != nil {
		pe.checked, pe.specChecked = pe.checked.ForPod(a.Spec), true
	}
	m.applyHosts(pe)
	if pe.spec != old {
		m.reportSpecErrors(pe, old)
	}
	if a := pe.pod.API; pe.specFixed && !pe.specChangeTold && a != nil && a.Annotations != nil &&
		a.Annotations[probespec.AnnotationProbes] != pe.spec.Value {
		pe.specChangeTold = true
		m.reportSpecChange(pe)
	}
}

// reportSpecErrors logs, as `probelet validate` words them, the problems
// of the pod's probes that were not reported for its previous ones (old),
// and publishes each as a Warning event ProbeSpecRejected about its
// container (the socket, and with the API server an Event on the pod):
// the containers concerned run unprobed, the others are not disturbed.
func (m *Manager) reportSpecErrors(pe *podEntry, old *probespec.Parsed) {
	ref := probespec.PodRef{Namespace: pe.pod.Namespace, Name: pe.pod.Name}
	for _, e := range pe.spec.List.For(ref) {
		name := e.Container
		if name == "" {
			name = probespec.PodWide
		}
		if old != nil && old.Errors[name] == pe.spec.Errors[name] {
			continue
		}
		m.log.Warn("Invalid probe spec", zap.String("pod", ref.String()), zap.String("podUID", pe.pod.UID),
			zap.String("container", e.Container), zap.String("error", e.Error()))
		m.events.Publish(Event{
			Time: m.clock.Now(), Type: probespec.EventWarning, Reason: probespec.EventProbeSpecRejected, Message: e.Error(),
			PodUID: pe.pod.UID, PodName: pe.pod.Name, PodNamespace: pe.pod.Namespace, ContainerName: e.Container,
		})
	}
}

// messageProbeSpecChanged is the message of probespec.EventProbeSpecChanged.
const messageProbeSpecChanged = probespec.AnnotationProbes + " changed after the pod was created; " +
	"the probes it was created with stay in force — recreate the pod to apply"

// reportSpecChange tells, once per pod, that the API object's annotation
// no longer is the one the pod was created with: a Warning event about the
// pod (no container), which the socket, the log and the API server get.
func (m *Manager) reportSpecChange(pe *podEntry) {
	ev := Event{
		Time: m.clock.Now(), Type: probespec.EventWarning, Reason: probespec.EventProbeSpecChanged, Message: messageProbeSpecChanged,
		PodUID: pe.pod.UID, PodName: pe.pod.Name, PodNamespace: pe.pod.Namespace,
	}
	m.events.Publish(ev)
	m.log.Warn(ev.Message, zap.String("pod", ev.PodNamespace+"/"+ev.PodName), zap.String("podUID", ev.PodUID),
		zap.String("reason", ev.Reason))
}

// PodSpec implements StatusSource.
func (m *Manager) PodSpec(uid string) (*probespec.Parsed, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pe, ok := m.reg.pods[uid]
	if !ok || pe.spec == nil {
		return nil, false
	}
	return pe.spec, true
}
