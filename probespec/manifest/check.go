package manifest

import (
	"fmt"

	"github.com/probelet/probelet/probespec"
)

// Problem says why the pod's probes cannot be checked at all — the
// document is unreadable, or the annotation is missing or on the
// workload's own metadata — and "" when they can.
func (p *Pod) Problem() string {
	switch {
	case p.Err != nil:
		return fmt.Sprintf("pod %s: %v", p.Ref, p.Err)
	case p.Misplaced:
		return fmt.Sprintf("pod %s: annotation %s is on the %s's own metadata; pods only get "+
			"it from spec.template.metadata.annotations", p.Ref, probespec.AnnotationProbes, p.Kind)
	case !p.HasAnnotation:
		return fmt.Sprintf("pod %s: annotation %s is not set in metadata.annotations", p.Ref, probespec.AnnotationProbes)
	}
	return ""
}

// OriginProblem says why the pod's probelet.io/probe-origin is not one
// the node takes (the node then probes it from its --probe-origin), ""
// when it is unset or valid.
func (p *Pod) OriginProblem() string {
	if p.Origin == "" {
		return ""
	}
	if _, err := probespec.PodOrigin(map[string]string{probespec.AnnotationProbeOrigin: p.Origin}, probespec.OriginNode); err != nil {
		return fmt.Sprintf("pod %s: %v", p.Ref, err)
	}
	return ""
}

// Check applies spec.Check to the pod's annotation against its spec; the
// caller checks Problem first.
func (p *Pod) Check() probespec.Checked {
	return probespec.Check(p.Ref, p.Annotation, p.Spec)
}
