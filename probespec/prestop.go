package probespec

import (
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
)

// PreStop is container c's preStop hook, as the kubelet's killContainer
// finds it: the pod spec's when a source gave it (the API server), else
// the io.kubernetes.container.preStopHandler annotation the kubelet wrote
// from the same spec when it created the container — what the kubelet
// itself reads to kill a container whose pod it no longer has. nil, nil
// when the container has no preStop hook. An annotation that does not
// read as a handler with exactly one action is an error naming it, and no
// hook (the kubelet logs it and runs none).
func PreStop(pod *node.Pod, c *node.Container) (*corev1.LifecycleHandler, error) {
	if sc := pod.API.SpecContainer(c.Name); sc != nil {
		if sc.Lifecycle == nil {
			return nil, nil
		}
		return sc.Lifecycle.PreStop, nil
	}
	raw, ok := c.Annotations[AnnotationPreStopHandler]
	if !ok {
		return nil, nil
	}
	h := &corev1.LifecycleHandler{}
	if err := json.Unmarshal([]byte(raw), h); err != nil {
		return nil, fmt.Errorf("annotation %s is malformed: %v", AnnotationPreStopHandler, err)
	}
	if err := oneAction(h); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationPreStopHandler, err)
	}
	return h, nil
}

// oneAction is the API server's rule for a lifecycle handler: exactly one
// of exec, httpGet, tcpSocket and sleep (tcpSocket is accepted and never
// run: the kubelet's runner has no case for it and fails the hook).
func oneAction(h *corev1.LifecycleHandler) error {
	n := 0
	for _, set := range []bool{h.Exec != nil, h.HTTPGet != nil, h.TCPSocket != nil, h.Sleep != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return errors.New("no action: one of exec, httpGet, tcpSocket or sleep is required")
	case n > 1:
		return errors.New("more than one action: exactly one of exec, httpGet, tcpSocket or sleep is allowed")
	case h.Exec != nil && len(h.Exec.Command) == 0:
		return errors.New("exec: command is required")
	case h.Sleep != nil && h.Sleep.Seconds < 0:
		return fmt.Errorf("sleep: seconds %d must be greater than or equal to 0", h.Sleep.Seconds)
	}
	return nil
}
