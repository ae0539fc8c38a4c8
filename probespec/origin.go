package probespec

import "fmt"

// Origin is where a pod's HTTP, gRPC and TCP-dial probes connect from.
type Origin string

// Origins of probes.
const (
	// OriginNode dials from the node's network namespace, as the kubelet
	// does: the app sees the node's address, and the CNI must let the
	// node reach the pod.
	OriginNode Origin = "node"
	// OriginPod dials from the pod's own network namespace, to the same
	// address the kubelet would: the app sees its pod's address, and no
	// packet crosses from the node.
	OriginPod Origin = "pod"
)

// ParseOrigin reads an origin: the --probe-origin flag's value or the
// probelet.io/probe-origin annotation's.
func ParseOrigin(v string) (Origin, error) {
	switch o := Origin(v); o {
	case OriginNode, OriginPod:
		return o, nil
	}
	return "", fmt.Errorf("%q is not %q or %q", v, OriginNode, OriginPod)
}

// PodOrigin is the origin the annotations ask for, def (the node's
// --probe-origin) without one. An invalid value is an error naming the
// annotation; def is what then applies.
func PodOrigin(annotations map[string]string, def Origin) (Origin, error) {
	v, ok := annotations[AnnotationProbeOrigin]
	if !ok {
		return def, nil
	}
	o, err := ParseOrigin(v)
	if err != nil {
		return def, fmt.Errorf("annotation %s: %w", AnnotationProbeOrigin, err)
	}
	return o, nil
}
