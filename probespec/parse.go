package probespec

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxAnnotationBytes bounds the probelet.io/probes value probelet reads:
// any pod author writes it, and a few hundred probes fit in a fraction of
// it, so a larger value is an attack or a mistake, rejected unread.
const MaxAnnotationBytes = 64 << 10

// Parse reads the probelet.io/probes annotation of a pod: JSON (or YAML)
// mapping container name to {livenessProbe, readinessProbe, startupProbe}
// with the field names of k8s.io/api/core/v1.Probe. Probes are defaulted
// and validated as the apiserver would. Valid containers are returned; a
// container with any problem is left out and its problems are in the
// ErrorList, each naming the pod, the container and the field. When the
// value cannot be read at all, no container is returned and the single
// error names the annotation. A value over MaxAnnotationBytes is rejected
// before it is read.
func Parse(pod PodRef, value string) (PodProbes, ErrorList) {
	if len(value) > MaxAnnotationBytes {
		return nil, ErrorList{annotationError(pod, fmt.Sprintf("%d bytes, over the limit of %d (64 KiB)", len(value), MaxAnnotationBytes))}
	}
	data, err := toJSON(value)
	if err != nil {
		return nil, ErrorList{annotationError(pod, err.Error())}
	}
	docs, err := splitContainers(data)
	if err != nil {
		return nil, ErrorList{annotationError(pod, err.Error())}
	}
	probes := make(PodProbes, len(docs))
	var errs ErrorList
	if _, ok := docs[""]; ok {
		// An empty name cannot be told apart from the annotation itself.
		errs = append(errs, annotationError(pod, "a container name is empty"))
		delete(docs, "")
	}
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		cp, ferrs := parseContainer(docs[name])
		if len(ferrs) > 0 {
			errs = append(errs, wrap(pod, name, ferrs)...)
			continue
		}
		probes[name] = cp
	}
	return probes, errs
}

// parseContainer decodes, defaults and validates one container's probes.
func parseContainer(d *containerDoc) (ContainerProbes, field.ErrorList) {
	errs := validateContainerName(d.name)
	if d.duplicate {
		errs = append(errs, fieldError(field.ErrorTypeDuplicate, "", field.OmitValueType{}, "declared more than once"))
	}
	cp, derrs, ok := decodeContainer(d.raw)
	errs = append(errs, derrs...)
	if !ok {
		return cp, errs
	}
	Default(&cp)
	return cp, append(errs, Validate(cp)...)
}

func annotationError(pod PodRef, detail string) *Error {
	return &Error{Pod: pod, Field: fieldError(field.ErrorTypeInvalid, "", field.OmitValueType{}, detail)}
}
