package testbed

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// PodSpec describes a pod the way the kubelet would hand it to containerd:
// RunPod adds the kubelet's labels and annotations.
type PodSpec struct {
	// Name is the pod name (required).
	Name string
	// Namespace defaults to "default".
	Namespace string
	// UID defaults to a value unique within the bed.
	UID string
	// Labels and Annotations are the pod's own; probelet reads
	// probelet.io/probes from Annotations.
	Labels, Annotations map[string]string
	// TerminationGracePeriodSeconds goes into the container annotation
	// io.kubernetes.pod.terminationGracePeriod; nil means the API default, 30.
	TerminationGracePeriodSeconds *int64
	// Container is the pod's one container.
	Container ContainerSpec
}

// ContainerSpec describes one container of a pod.
type ContainerSpec struct {
	// Name is the container name (required).
	Name string
	// Image defaults to BusyboxImage.
	Image string
	// Command and Args replace the image's entrypoint and cmd, as in a pod spec.
	Command, Args []string
	// Env is the container's environment.
	Env map[string]string
	// Ports go into the io.kubernetes.container.ports annotation, as the
	// kubelet writes them; named probe ports resolve through it.
	Ports []corev1.ContainerPort
	// Labels and Annotations are added to the kubelet's (and win over them).
	Labels, Annotations map[string]string
}

// validate names the pod, container and field at fault.
func (p PodSpec) validate() error {
	if p.Name == "" {
		return errors.New("testbed: pod name is empty")
	}
	where := fmt.Sprintf("pod %s/%s", p.Namespace, p.Name)
	if g := p.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		return fmt.Errorf("testbed: %s: terminationGracePeriodSeconds %d is negative", where, *g)
	}
	return p.Container.validate(where)
}

func (c ContainerSpec) validate(where string) error {
	if c.Name == "" {
		return fmt.Errorf("testbed: %s: container name is empty", where)
	}
	for i, port := range c.Ports {
		if port.ContainerPort < 1 || port.ContainerPort > 65535 {
			return fmt.Errorf("testbed: %s container %s: ports[%d].containerPort %d is not in 1-65535", where, c.Name, i, port.ContainerPort)
		}
	}
	return nil
}

// withDefaults fills the defaults; seq makes the default UID unique.
func (p PodSpec) withDefaults(seq int) PodSpec {
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	if p.UID == "" {
		p.UID = fmt.Sprintf("testbed-%s-%s-%d", p.Namespace, p.Name, seq)
	}
	if p.TerminationGracePeriodSeconds == nil {
		g := int64(corev1.DefaultTerminationGracePeriodSeconds)
		p.TerminationGracePeriodSeconds = &g
	}
	if p.Container.Image == "" {
		p.Container.Image = BusyboxImage
	}
	return p
}
