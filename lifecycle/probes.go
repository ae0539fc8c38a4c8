package lifecycle

import (
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/spec"
)

// ProbeParser turns a pod's probelet.io/probes annotation value into the
// containers' probes and, per container name, why its probes were
// rejected. It must not panic on any input.
type ProbeParser func(namespace, name, value string) (spec.PodProbes, map[string]string)

// ParseProbes is the default ProbeParser: the spec package's parser, with
// its errors grouped per container (spec.PodWide when the annotation as a
// whole could not be read).
func ParseProbes(namespace, name, value string) (spec.PodProbes, map[string]string) {
	probes, errs := spec.Parse(spec.PodRef{Namespace: namespace, Name: name}, value)
	return probes, errs.ByContainer()
}

// containerErrors spreads an annotation-wide error onto every container of
// the pod, so each container shows why it has no probes.
func containerErrors(errs map[string]string, ctrs []prober.Container) map[string]string {
	wide, ok := errs[spec.PodWide]
	if !ok {
		return errs
	}
	out := make(map[string]string, len(errs)+len(ctrs))
	for k, v := range errs {
		out[k] = v
	}
	for _, c := range ctrs {
		if _, ok := out[c.Name]; !ok {
			out[c.Name] = wide
		}
	}
	return out
}
