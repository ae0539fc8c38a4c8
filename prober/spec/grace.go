package spec

import (
	"fmt"
	"strconv"
)

// PodGracePeriod reads the pod's terminationGracePeriodSeconds from the
// io.kubernetes.pod.terminationGracePeriod container annotation the kubelet
// writes; nil, nil when it is absent.
func PodGracePeriod(annotations map[string]string) (*int64, error) {
	v, ok := annotations[AnnotationPodTerminationGracePeriod]
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("annotation %s=%q: not an integer number of seconds", AnnotationPodTerminationGracePeriod, v)
	}
	if n < 0 {
		return nil, fmt.Errorf("annotation %s=%q: must be greater than or equal to 0", AnnotationPodTerminationGracePeriod, v)
	}
	return &n, nil
}
