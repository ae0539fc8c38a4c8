package probespec

import (
	corev1 "k8s.io/api/core/v1"
)

// FieldName is the probe's field name in a Kubernetes container and in the
// annotation: livenessProbe, readinessProbe or startupProbe.
func FieldName(t Type) string {
	switch t {
	case Liveness:
		return "livenessProbe"
	case Readiness:
		return "readinessProbe"
	case Startup:
		return "startupProbe"
	}
	return "unknownProbe"
}

// NativeProbes are the kubelet probes a container declares in its spec.
func NativeProbes(c *corev1.Container) ContainerProbes {
	return ContainerProbes{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe}
}

// Get returns the probe of the given type, nil when it is not configured.
func (c ContainerProbes) Get(t Type) *corev1.Probe {
	switch t {
	case Liveness:
		return c.Liveness
	case Readiness:
		return c.Readiness
	case Startup:
		return c.Startup
	}
	return nil
}

// Empty reports whether no probe is configured.
func (c ContainerProbes) Empty() bool {
	return c.Liveness == nil && c.Readiness == nil && c.Startup == nil
}
