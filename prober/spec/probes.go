package spec

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/prober/probe"
)

// FieldName is the probe's field name in a Kubernetes container and in the
// annotation: livenessProbe, readinessProbe or startupProbe.
func FieldName(t probe.Type) string {
	switch t {
	case probe.Liveness:
		return "livenessProbe"
	case probe.Readiness:
		return "readinessProbe"
	case probe.Startup:
		return "startupProbe"
	}
	return "unknownProbe"
}

// NativeProbes are the kubelet probes a container declares in its spec.
func NativeProbes(c *corev1.Container) ContainerProbes {
	return ContainerProbes{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe}
}

// Get returns the probe of the given type, nil when it is not configured.
func (c ContainerProbes) Get(t probe.Type) *corev1.Probe {
	switch t {
	case probe.Liveness:
		return c.Liveness
	case probe.Readiness:
		return c.Readiness
	case probe.Startup:
		return c.Startup
	}
	return nil
}

// Empty reports whether no probe is configured.
func (c ContainerProbes) Empty() bool {
	return c.Liveness == nil && c.Readiness == nil && c.Startup == nil
}
