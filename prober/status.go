package prober

import (
	"cmp"
	"slices"
	"strings"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// Containers implements StatusSource: every container with probe workers
// or a spec error, ordered by namespace, pod name and container name.
func (m *Manager) Containers() []ContainerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ContainerStatus
	for _, pe := range m.reg.pods {
		for i := range pe.pod.Containers {
			if st, ok := m.reg.status(pe, &pe.pod.Containers[i]); ok {
				out = append(out, st)
			}
		}
	}
	slices.SortFunc(out, func(a, b ContainerStatus) int {
		return cmp.Or(strings.Compare(a.PodNamespace, b.PodNamespace),
			strings.Compare(a.PodName, b.PodName),
			strings.Compare(a.ContainerName, b.ContainerName))
	})
	return out
}

// Pod implements StatusSource.
func (m *Manager) Pod(uid string) []ContainerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	pe, ok := m.reg.pods[uid]
	if !ok {
		return nil
	}
	var out []ContainerStatus
	for i := range pe.pod.Containers { // sorted by name (node.Pod)
		if st, ok := m.reg.status(pe, &pe.pod.Containers[i]); ok {
			out = append(out, st)
		}
	}
	return out
}

// Container implements StatusSource.
func (m *Manager) Container(id string) (ContainerStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pe, ok := m.reg.byID[id]
	if !ok {
		return ContainerStatus{}, false
	}
	for i := range pe.pod.Containers {
		if pe.pod.Containers[i].ID == id {
			return m.reg.status(pe, &pe.pod.Containers[i])
		}
	}
	return ContainerStatus{}, false
}

// status builds c's status; ok is false when c has neither probes nor a spec error.
func (r *registry) status(pe *podEntry, c *node.Container) (ContainerStatus, bool) {
	st := ContainerStatus{
		PodUID: pe.pod.UID, PodName: pe.pod.Name, PodNamespace: pe.pod.Namespace,
		ContainerName: c.Name, ContainerID: c.ID, State: c.State, StartedAt: c.StartedAt,
		Spec: pe.spec.Probes[c.Name], SpecError: pe.spec.ErrorFor(c.Name),
		Probes: make(map[probespec.Type]ProbeStatus),
	}
	for _, t := range probespec.Types {
		if w := pe.worker(c.Name, t); w != nil {
			st.Probes[t] = r.probeStatus(w, c)
		}
	}
	i, plain := plainInit(pe.pod.API, c.Name)
	if plain && st.SpecError == "" {
		st.SpecError = forbiddenInitProbes(i, st.Spec)
	}
	if len(st.Probes) == 0 && st.SpecError == "" {
		return ContainerStatus{}, false
	}
	st.Restarts = slices.Clone(pe.restarts[c.Name])
	if plain {
		// The kubelet's UpdatePodStatus for a non-restartable init
		// container: started while it runs (it has no startup worker),
		// ready once it exited 0.
		st.Started, st.Ready = c.Running(), c.State == node.StateExited && c.ExitCode == 0
		return st, true
	}
	running := c.State == node.StateRunning
	st.Started = running && r.started(pe, c)
	st.Ready = st.Started && r.ready(pe, c)
	return st, true
}

// ready is the kubelet's readiness: the published readiness result, or
// true when the container has no readiness probe.
func (r *registry) ready(pe *podEntry, c *node.Container) bool {
	if pe.worker(c.Name, probespec.Readiness) == nil {
		return true
	}
	res, ok := r.cache.Get(results.Key{ContainerID: c.ID, Type: probespec.Readiness})
	return ok && res == results.Success
}

// probeStatus is w's live state as seen for container c. Until the worker
// has followed c, c has no published result (Unknown).
func (r *registry) probeStatus(w *worker, c *node.Container) ProbeStatus {
	ps := ProbeStatus{
		Type:             w.typ,
		Result:           results.Unknown,
		Consecutive:      w.resultRun,
		SuccessThreshold: w.successThreshold(),
		FailureThreshold: w.failureThreshold(),
		OnHold:           w.onHold,
		LastProbeTime:    w.lastProbe,
		LastOutput:       w.lastOutput,
		Method:           w.method,
		Origin:           originText(w),
		History:          w.history.records(),
	}
	if w.pending != nil && w.pending.containerID == c.ID {
		ps.KillDeferred, ps.KillDeferredSince = w.pending.deferred, w.pending.since
	}
	if r, ok := r.cache.Get(results.Key{ContainerID: c.ID, Type: w.typ}); ok {
		ps.Result = r
	} else {
		ps.Unpublished = true
	}
	return ps
}

// LivenessCensus counts the node's pods the way the node lifecycle
// controller counts a zone's nodes, for the kill guard: probed are the pods
// with a running container that a liveness probe (once started) or a
// startup probe (until then) probes; failing are those of them with such
// a container whose probe has reached its failureThreshold (a kill
// decided, waiting or under way), as a node counts NotReady only once its
// grace period has passed. A run of failures below the threshold does not
// count: a probe pinned below a huge failureThreshold restarts nothing
// and must not hold other pods' kills back. A pod counts once however
// many containers it has, so one tenant's containers weigh as one pod.
func (m *Manager) LivenessCensus() (probed, failing int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, pe := range m.reg.pods {
		p, f := m.reg.podCensus(pe)
		if p {
			probed++
		}
		if f {
			failing++
		}
	}
	return probed, failing
}

// podCensus is pe's part of the census: whether a liveness or startup
// probe probes one of its running containers, and whether one of those
// reached its failureThreshold.
func (r *registry) podCensus(pe *podEntry) (probed, failing bool) {
	for i := range pe.pod.Containers {
		c := &pe.pod.Containers[i]
		if !c.Running() {
			continue
		}
		t := probespec.Liveness
		if !r.started(pe, c) {
			t = probespec.Startup
		}
		w := pe.worker(c.Name, t)
		if w == nil || w.containerID != c.ID {
			continue
		}
		probed = true
		if w.pending != nil || (w.onHold && w.lastResult == results.Failure) {
			return true, true
		}
	}
	return probed, false
}
