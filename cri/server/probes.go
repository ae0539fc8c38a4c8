package server

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/spec"
)

// specFor returns the container's spec for one probe type, nil if none.
func specFor(cp spec.ContainerProbes, t probe.Type) *corev1.Probe {
	switch t {
	case probe.Liveness:
		return cp.Liveness
	case probe.Readiness:
		return cp.Readiness
	case probe.Startup:
		return cp.Startup
	}
	return nil
}

// configured lists the probe types a container has a spec or state for,
// in liveness, readiness, startup order.
func configured(st *prober.ContainerStatus) []probe.Type {
	if st == nil {
		return nil
	}
	var out []probe.Type
	for _, t := range probe.Types {
		_, ok := st.Probes[t]
		if ok || specFor(st.Spec, t) != nil {
			out = append(out, t)
		}
	}
	return out
}
