package probespec

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodWide is the ErrorList.ByContainer key of errors that concern the
// annotation as a whole (it could not be read), so no container is named.
// It can never clash with a container name, which is a DNS-1123 label.
const PodWide = "*"

// PodRef names the pod whose annotation is parsed; every error carries it.
type PodRef struct {
	// Namespace is the pod's namespace.
	Namespace string
	// Name is the pod's name.
	Name string
}

// String returns "namespace/name", or just the name when there is no
// namespace; a missing name reads "<unnamed>".
func (p PodRef) String() string {
	name := p.Name
	if name == "" {
		name = "<unnamed>"
	}
	if p.Namespace == "" {
		return name
	}
	return p.Namespace + "/" + name
}

// Error is one problem found in a pod's probe annotation.
type Error struct {
	// Pod is the pod the annotation belongs to.
	Pod PodRef
	// Container is the container the problem is about; empty when the
	// annotation as a whole could not be read.
	Container string
	// Field says what is wrong. For a container its path starts at the
	// probe (livenessProbe.periodSeconds); for the whole annotation the
	// path is empty.
	Field *field.Error
}

var _ error = (*Error)(nil)

// Error renders the problem as
// `pod NS/NAME: container "C": FIELD: Invalid value: V: DETAIL`.
func (e *Error) Error() string {
	return "pod " + e.Pod.String() + ": " + e.scope() + e.Reason()
}

// Reason is the problem without the pod and container prefix, e.g.
// `livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0`.
func (e *Error) Reason() string {
	if e.Field == nil {
		return "unknown error"
	}
	if e.Field.Field == "" {
		// A bare explanation of the whole value reads better without
		// the "Invalid value:" label.
		if e.Field.BadValue == (field.OmitValueType{}) && e.Field.Detail != "" {
			return e.Field.Detail
		}
		return e.Field.ErrorBody()
	}
	return e.Field.Error()
}

// Unwrap gives errors.As access to the field error.
func (e *Error) Unwrap() error {
	if e.Field == nil {
		return nil
	}
	return e.Field
}

func (e *Error) scope() string {
	if e.Container == "" {
		return "annotation " + AnnotationProbes + ": "
	}
	return fmt.Sprintf("container %q: ", e.Container)
}

// ErrorList holds every problem found in one pod's annotation, in a stable
// order: annotation-wide errors first, then containers by name, each in
// validation order. A nil or empty list means no problem; use Err to turn
// it into a plain error.
type ErrorList []*Error

var _ error = ErrorList(nil)

// Error joins every problem, one per line.
func (l ErrorList) Error() string {
	return strings.Join(l.Strings(), "\n")
}

// Len is the number of problems.
func (l ErrorList) Len() int { return len(l) }

// Err returns the list as an error, or nil when it is empty (a nil
// ErrorList stored in an error interface would not compare equal to nil).
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Unwrap lets errors.Is and errors.As look at each problem.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// ForContainer returns the problems of one container; PodWide selects the
// annotation-wide ones.
func (l ErrorList) ForContainer(name string) ErrorList {
	var out ErrorList
	for _, e := range l {
		if key(e) == name {
			out = append(out, e)
		}
	}
	return out
}

// Containers lists, sorted, the containers that have problems; PodWide is
// included when the annotation as a whole was rejected.
func (l ErrorList) Containers() []string {
	seen := map[string]bool{}
	var names []string
	for _, e := range l {
		if k := key(e); !seen[k] {
			seen[k] = true
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

// ByContainer maps each container with problems to its reasons joined by
// "; " (without the pod and container prefix), the form node.Pod.SpecErrors
// takes. Annotation-wide problems are under PodWide and name the
// annotation, since whoever reads them sees no field path.
func (l ErrorList) ByContainer() map[string]string {
	if len(l) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, e := range l {
		k, reason := key(e), e.Reason()
		if k == PodWide {
			reason = e.scope() + reason
		}
		if prev, ok := out[k]; ok {
			out[k] = prev + "; " + reason
			continue
		}
		out[k] = reason
	}
	return out
}

// Strings renders every problem, for JSON output.
func (l ErrorList) Strings() []string {
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = e.Error()
	}
	return out
}

func key(e *Error) string {
	if e.Container == "" {
		return PodWide
	}
	return e.Container
}

// wrap attaches the pod and container to a container's field errors.
func wrap(pod PodRef, container string, errs field.ErrorList) ErrorList {
	out := make(ErrorList, len(errs))
	for i, fe := range errs {
		out[i] = &Error{Pod: pod, Container: container, Field: fe}
	}
	return out
}

// For returns the problems as found in pod's annotation: a Memo's parse
// names no pod, since replicas share it.
func (l ErrorList) For(pod PodRef) ErrorList {
	out := make(ErrorList, len(l))
	for i, e := range l {
		c := *e
		c.Pod = pod
		out[i] = &c
	}
	return out
}
