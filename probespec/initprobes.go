package probespec

import (
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PlainInitContainer reports the index of podSpec's init container named
// name when it is a plain init container, one without restartPolicy
// Always. The kubelet makes probe workers only for a pod's containers and
// its restartable init containers (sidecars), and the API server forbids
// probes on the others.
func PlainInitContainer(podSpec *corev1.PodSpec, name string) (int, bool) {
	if podSpec == nil {
		return -1, false
	}
	for i := range podSpec.InitContainers {
		if c := &podSpec.InitContainers[i]; c.Name == name {
			return i, c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways
		}
	}
	return -1, false
}

// ForbiddenInitProbes is the API server's verdict (validateInitContainers)
// on the probes cp sets on the plain init container at index i: one
// Forbidden error per probe, at spec.initContainers[i].<probe>, and
// nothing about what is inside the probe.
func ForbiddenInitProbes(i int, cp ContainerProbes) field.ErrorList {
	path := field.NewPath("spec", "initContainers").Index(i)
	var errs field.ErrorList
	for _, t := range Types {
		if cp.Get(t) != nil {
			errs = append(errs, field.Forbidden(path.Child(FieldName(t)), "may not be set for init containers without restartPolicy=Always"))
		}
	}
	return errs
}

// forbidInitProbes gives each plain init container of podSpec whose
// annotation entry Parse rejected the API server's errors instead: the
// problems found inside its probes become one Forbidden error per probe.
// Problems outside the probes (an unknown or duplicate key) stay.
func forbidInitProbes(ref PodRef, annotation string, errs ErrorList, podSpec *corev1.PodSpec) ErrorList {
	var docs map[string]*containerDoc
	for _, name := range errs.Containers() {
		i, plain := PlainInitContainer(podSpec, name)
		if !plain {
			continue
		}
		if docs == nil {
			data, err := toJSON(annotation)
			if err != nil {
				return errs
			}
			if docs, err = splitContainers(data); err != nil {
				return errs
			}
		}
		d, ok := docs[name]
		if !ok {
			continue
		}
		declared := declaredProbes(d.raw)
		if declared.Empty() {
			continue // not an object of probes: Parse's word stands
		}
		errs = slices.DeleteFunc(errs, func(e *Error) bool { return e.Container == name && inProbe(e) })
		errs = append(errs, wrap(ref, name, ForbiddenInitProbes(i, declared))...)
	}
	return errs
}

// declaredProbes marks the probes an annotation entry sets (their content
// left empty), whatever their content is.
func declaredProbes(raw json.RawMessage) ContainerProbes {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return ContainerProbes{}
	}
	set := func(t Type) *corev1.Probe {
		if v, ok := fields[FieldName(t)]; ok && string(v) != "null" {
			return &corev1.Probe{}
		}
		return nil
	}
	return ContainerProbes{Liveness: set(Liveness), Readiness: set(Readiness), Startup: set(Startup)}
}

// inProbe reports whether e is about a field inside one of the probes.
func inProbe(e *Error) bool {
	if e.Field == nil {
		return false
	}
	for _, t := range Types {
		rest, ok := strings.CutPrefix(e.Field.Field, FieldName(t))
		if ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return true
		}
	}
	return false
}
