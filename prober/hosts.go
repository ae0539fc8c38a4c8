package prober

import (
	"maps"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

// hostScope is what pod's probes may name as their host: its own IPs, the
// operator's --allow-probe-host CIDRs, or anything for a pod in the node's
// network or in a namespace an admin labelled. With the API server (WithNamespaceGrants)
// the label is known once the API server told; until then such hosts wait.
func (m *Manager) hostScope(pod *node.Pod) probespec.HostScope {
	s := probespec.HostScope{PodIPs: pod.IPs, CIDRs: m.hostCIDRs}
	a := pod.API
	switch {
	case hostNetworkPod(pod):
		s.Any = true
	case a != nil && a.NamespaceKnown:
		s.Any = a.ProbeHostAllowed
	case m.namespaceGrants:
		s.Undecided = true
	}
	return s
}

// scopeChanged reports whether the exceptions of pe's host scope changed
// since its previous snapshot old (the IPs are netChanged's), for a pod
// whose probes name a host: their targets must be prepared again, at once.
func (m *Manager) scopeChanged(pe *podEntry, old node.Pod) bool {
	if !probespec.NamesHost(pe.checked.Probes) {
		return false
	}
	a, b := m.hostScope(&old), m.hostScope(&pe.pod)
	return a.Any != b.Any || a.Undecided != b.Undecided
}

// applyHosts sets pe.spec to the pod's probes with its host scope applied
// (spec.Parsed.WithHosts), keeping the current value when nothing it says
// changed, so an unchanged verdict is not reported again.
func (m *Manager) applyHosts(pe *podEntry) {
	next := pe.checked.WithHosts(m.hostScope(&pe.pod))
	if cur := pe.spec; cur != nil && cur.Value == next.Value && len(cur.Probes) == len(next.Probes) &&
		maps.Equal(cur.Errors, next.Errors) {
		return
	}
	pe.spec = next
}
