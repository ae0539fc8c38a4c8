package server

import (
	"cmp"
	"slices"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

// entry is one container as the server presents it: the lifecycle cache's
// pod and container joined with the prober's status, when it has one.
type entry struct {
	pod    *node.Pod
	ctr    node.Container
	status *prober.ContainerStatus
	// declared are the probes the pod's annotation gives the container;
	// read only while it has no probe state.
	declared probespec.ContainerProbes
}

// namespace and podName come from the pod, which for a container the
// lifecycle cache does not know (yet) is built from its status.
func (e entry) namespace() string { return e.pod.Namespace }
func (e entry) podName() string   { return e.pod.Name }

// started reports the startup gate. Without probe state (the container
// has no probes, or the prober has not caught up with the runtime: just
// after a start or probelet's own restart) the kubelet's rule applies to
// the declared probes: a running container has started unless it has a
// startup probe that has not yet succeeded.
func (e entry) started() bool {
	if e.status != nil {
		return e.status.Started
	}
	return e.ctr.State == node.StateRunning && e.declared.Startup == nil
}

// ready reports published readiness, with the same fallback as started: a
// container with a readiness probe is not ready until a probe says so.
func (e entry) ready() bool {
	if e.status != nil {
		return e.status.Ready
	}
	return e.started() && e.declared.Readiness == nil
}

// catalog is a consistent-enough snapshot of both read sides, taken once
// per call.
type catalog struct {
	pods    []*node.Pod
	entries []entry
}

// snapshot joins view and status by container ID. Containers with probe
// state but unknown to the view (a race at start or removal) are kept,
// with a pod built from the status.
func (s *Server) snapshot() catalog {
	var c catalog
	// The view first: the lifecycle cache hands the prober each change
	// under its lock, so probe state read after the view is at least as
	// new, and a container the view shows has its state unless the prober
	// has none for it.
	pods := s.view.Pods()
	byID := map[string]*prober.ContainerStatus{}
	for _, st := range s.status.Containers() {
		byID[st.ContainerID] = &st
	}
	for _, p := range pods {
		pod := &p
		c.pods = append(c.pods, pod)
		for _, ctr := range pod.Containers {
			c.entries = append(c.entries, s.entry(pod, ctr, byID[ctr.ID]))
			delete(byID, ctr.ID)
		}
	}
	for _, st := range byID {
		c.entries = append(c.entries, orphan(st))
	}
	sortCatalog(&c)
	return c
}

// container resolves a container ID or unique prefix. A full ID, what
// crictl inspect and probelet's own tools send, is looked up without
// joining and sorting the whole node.
func (s *Server) container(id string) (entry, error) {
	if e, ok := s.lookup(id); ok {
		return e, nil
	}
	return s.snapshot().container(id)
}

// lookup is snapshot's join for the one container whose ID is exactly id:
// the view's container with its probe state, else probe state alone.
func (s *Server) lookup(id string) (entry, bool) {
	if id == "" {
		return entry{}, false
	}
	pods := s.view.Pods()
	for i := range pods {
		for _, ctr := range pods[i].Containers {
			if ctr.ID == id {
				return s.entry(&pods[i], ctr, s.statusOf(id)), true
			}
		}
	}
	if st, ok := s.status.Container(id); ok {
		return orphan(&st), true
	}
	return entry{}, false
}

func (s *Server) statusOf(id string) *prober.ContainerStatus {
	if st, ok := s.status.Container(id); ok {
		return &st
	}
	return nil
}

// entry joins a view's container with its probe state; without one (a
// container the engine has not taken up yet: pods' unprobed containers,
// and every container for a moment when probelet starts), with the probes
// the engine holds for its pod.
func (s *Server) entry(pod *node.Pod, ctr node.Container, st *prober.ContainerStatus) entry {
	e := entry{pod: pod, ctr: ctr, status: st}
	if st == nil {
		if parsed, ok := s.status.PodSpec(pod.UID); ok {
			e.declared = parsed.Probes[ctr.Name]
		}
	}
	return e
}

// orphan builds an entry from probe state alone.
func orphan(st *prober.ContainerStatus) entry {
	pod := &node.Pod{UID: st.PodUID, Name: st.PodName, Namespace: st.PodNamespace}
	ctr := node.Container{ID: st.ContainerID, Name: st.ContainerName, State: st.State, StartedAt: st.StartedAt}
	return entry{pod: pod, ctr: ctr, status: st}
}

func sortCatalog(c *catalog) {
	slices.SortFunc(c.pods, func(a, b *node.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.SandboxID, b.SandboxID))
	})
	slices.SortFunc(c.entries, func(a, b entry) int {
		return cmp.Or(
			cmp.Compare(a.namespace(), b.namespace()),
			cmp.Compare(a.podName(), b.podName()),
			cmp.Compare(a.ctr.Name, b.ctr.Name),
			cmp.Compare(a.ctr.ID, b.ctr.ID))
	})
}

// pod returns the pod whose sandbox ID equals id or starts with it, if
// exactly one does.
func (c catalog) pod(id string) (*node.Pod, error) {
	return byID(c.pods, id, "pod sandbox", func(p *node.Pod) string { return p.SandboxID })
}

// container returns the entry whose container ID equals id or starts with
// it, if exactly one does.
func (c catalog) container(id string) (entry, error) {
	return byID(c.entries, id, "container", func(e entry) string { return e.ctr.ID })
}

// byID returns the item whose ID equals id, else the only one whose ID
// starts with it. An exact ID wins wherever it sorts, so the whole list
// is read before a prefix is called ambiguous.
func byID[T any](items []T, id, kind string, idOf func(T) string) (T, error) {
	var found, zero T
	n := 0
	for _, it := range items {
		switch itID := idOf(it); {
		case itID == id:
			return it, nil
		case id != "" && hasPrefix(itID, id):
			found, n = it, n+1
		}
	}
	switch n {
	case 0:
		return zero, errNotFound(kind, id)
	case 1:
		return found, nil
	}
	return zero, errAmbiguousID(kind, id)
}

// containersOf lists the entries of one pod.
func (c catalog) containersOf(p *node.Pod) []entry {
	var out []entry
	for _, e := range c.entries {
		if e.pod == p {
			out = append(out, e)
		}
	}
	return out
}
