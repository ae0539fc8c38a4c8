// Package probespec is probelet's contract with pod authors and the
// cluster: the probelet.io/probes annotation (parsed, defaulted and
// validated into Kubernetes probe specs with the kubelet's rules), the kinds
// of probe, and every probelet.io/* name and reason (names.go). The engine,
// kube/, the webhook and the controller import it and not one another.
package probespec

import corev1 "k8s.io/api/core/v1"

const (
	// AnnotationContainerPorts is the container annotation the kubelet writes
	// with the container's ports (a JSON list of {name, containerPort, protocol}).
	AnnotationContainerPorts = "io.kubernetes.container.ports"
	// AnnotationPodTerminationGracePeriod is the container annotation the
	// kubelet writes with the pod's terminationGracePeriodSeconds.
	AnnotationPodTerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
	// AnnotationPreStopHandler is the container annotation the kubelet
	// writes with the container's preStop hook (a JSON LifecycleHandler).
	AnnotationPreStopHandler = "io.kubernetes.container.preStopHandler"
)

// ContainerProbes are one container's defaulted, validated probes; a nil
// field means that probe type is not configured.
type ContainerProbes struct {
	Liveness  *corev1.Probe `json:"livenessProbe,omitempty"`
	Readiness *corev1.Probe `json:"readinessProbe,omitempty"`
	Startup   *corev1.Probe `json:"startupProbe,omitempty"`
}

// PodProbes maps container name to that container's probes.
type PodProbes map[string]ContainerProbes
