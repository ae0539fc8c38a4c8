package server

import (
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
)

// configured lists the probe types a container has a spec or state for,
// in liveness, readiness, startup order.
func configured(st *prober.ContainerStatus) []probe.Type {
	if st == nil {
		return nil
	}
	var out []probe.Type
	for _, t := range probe.Types {
		_, ok := st.Probes[t]
		if ok || st.Spec.Get(t) != nil {
			out = append(out, t)
		}
	}
	return out
}
