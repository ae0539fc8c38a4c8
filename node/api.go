package node

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// APIPod is what the API server knows about a pod that the runtime does
// not: its spec (restart policies, readiness gates, env, grace periods)
// and whether its deletion was requested. NRI stays the truth about what
// runs; this only adds. It is shared between snapshots and never modified.
type APIPod struct {
	// Spec is the pod's spec as the API server has it.
	Spec *corev1.PodSpec
	// DeletionTimestamp is when the pod's deletion was requested; zero
	// while it is not being deleted.
	DeletionTimestamp time.Time
	// DeletionGracePeriodSeconds is the grace of a requested deletion.
	DeletionGracePeriodSeconds *int64
	// AllContainersRestarting is set while the pod's AllContainersRestarting
	// condition is True: the kubelet is restarting every container of the
	// pod after one exited on a RestartAllContainers rule.
	AllContainersRestarting bool
	// Annotations are the API object's, which may have changed since the
	// sandbox was created (the engine keeps the sandbox's and reports a
	// change); nil when the source does not say, empty when it has none.
	Annotations map[string]string
	// NamespaceKnown is set once the pod's namespace's labels are known;
	// ProbeHostAllowed then says whether an admin labelled it
	// probelet.io/allow-probe-host=true, which lets its pods' probes name
	// any host.
	NamespaceKnown, ProbeHostAllowed bool
}

// SpecContainer returns the spec of the pod's container (or restartable
// init container) named name; nil when unknown.
func (a *APIPod) SpecContainer(name string) *corev1.Container {
	if a == nil || a.Spec == nil {
		return nil
	}
	for i := range a.Spec.Containers {
		if a.Spec.Containers[i].Name == name {
			return &a.Spec.Containers[i]
		}
	}
	for i := range a.Spec.InitContainers {
		if a.Spec.InitContainers[i].Name == name {
			return &a.Spec.InitContainers[i]
		}
	}
	return nil
}

// IsInitContainer reports whether the pod's spec names name among its
// init containers (a sidecar, when it has probes).
func (a *APIPod) IsInitContainer(name string) bool {
	if a == nil || a.Spec == nil {
		return false
	}
	for i := range a.Spec.InitContainers {
		if a.Spec.InitContainers[i].Name == name {
			return true
		}
	}
	return false
}
