// Package spec parses, defaults and validates the probelet.io/probes pod
// annotation into Kubernetes probe specs, with the kubelet's rules.
package spec

import corev1 "k8s.io/api/core/v1"

const (
	// AnnotationProbes is the pod annotation that declares probes per container.
	AnnotationProbes = "probelet.io/probes"
	// AnnotationContainerPorts is the container annotation the kubelet writes
	// with the container's ports (a JSON list of {name, containerPort, protocol}).
	AnnotationContainerPorts = "io.kubernetes.container.ports"
	// AnnotationPodTerminationGracePeriod is the container annotation the
	// kubelet writes with the pod's terminationGracePeriodSeconds.
	AnnotationPodTerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
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
