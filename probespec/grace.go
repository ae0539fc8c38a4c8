package probespec

import (
	"fmt"
	"strconv"

	"github.com/probelet/probelet/node"
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

// PodGrace is a pod's terminationGracePeriodSeconds: the pod's own when a
// source knows it (the API server), else what the kubelet wrote on its
// containers; nil when nothing says. An unreadable annotation is an error
// (and skipped for the next container's).
func PodGrace(pod *node.Pod) (*int64, error) {
	if pod.TerminationGracePeriodSeconds != nil {
		return pod.TerminationGracePeriodSeconds, nil
	}
	var firstErr error
	for i := range pod.Containers {
		g, err := PodGracePeriod(pod.Containers[i].Annotations)
		if g != nil {
			return g, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}
