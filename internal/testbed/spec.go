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
	// Privileged makes the sandbox privileged, which a privileged
	// container needs.
	Privileged bool
	// HostNetwork runs the pod in the node's network namespace (CRI
	// namespace_options.network NODE), as hostNetwork: true does.
	HostNetwork bool
	// UserNamespace, when set, gives the pod its own user namespace
	// (CRI userns_options, mode POD) mapping container IDs 0..Length-1 to
	// host IDs HostID..; the container shares it.
	UserNamespace *UserNamespace
	// Container is the pod's one container.
	Container ContainerSpec
}

// UserNamespace is a pod user namespace's UID and GID mapping.
type UserNamespace struct {
	HostID, Length uint32
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
	// Security is the container's security context as the kubelet passes
	// it to the runtime; nil: the runtime's defaults.
	Security *SecurityContext
}

// SecurityContext is the CRI LinuxContainerSecurityContext fields the
// kubelet derives from a pod's securityContext.
type SecurityContext struct {
	// Privileged needs PodSpec.Privileged too.
	Privileged bool
	// RunAsUser and RunAsGroup: nil, the image's.
	RunAsUser, RunAsGroup *int64
	SupplementalGroups    []int64
	// AddCapabilities and DropCapabilities name capabilities without the
	// CAP_ prefix, as the kubelet passes them ("ALL" drops every one).
	AddCapabilities, DropCapabilities []string
	// NoNewPrivs is allowPrivilegeEscalation: false.
	NoNewPrivs bool
	// ReadOnlyRootfs is readOnlyRootFilesystem.
	ReadOnlyRootfs bool
	// Seccomp is the profile; nil: unconfined, as the kubelet's default.
	Seccomp *SeccompProfile
}

// SeccompProfile is a container's seccomp profile: RuntimeDefault, or
// Localhost with the path of a profile file on the node.
type SeccompProfile struct {
	RuntimeDefault bool
	Localhost      string
}

// validate names the pod, container and field at fault.
func (p PodSpec) validate() error {
	if err := p.validateSandbox(); err != nil {
		return err
	}
	where := fmt.Sprintf("pod %s/%s", p.Namespace, p.Name)
	if s := p.Container.Security; s != nil {
		if s.Privileged && !p.Privileged {
			return fmt.Errorf("testbed: %s container %s: security.privileged needs a privileged pod", where, p.Container.Name)
		}
		if s.Seccomp != nil && s.Seccomp.RuntimeDefault == (s.Seccomp.Localhost != "") {
			return fmt.Errorf("testbed: %s container %s: security.seccomp needs either RuntimeDefault or Localhost", where, p.Container.Name)
		}
	}
	return p.Container.validate(where)
}

// validateSandbox checks what the sandbox alone takes.
func (p PodSpec) validateSandbox() error {
	if p.Name == "" {
		return errors.New("testbed: pod name is empty")
	}
	where := fmt.Sprintf("pod %s/%s", p.Namespace, p.Name)
	if g := p.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		return fmt.Errorf("testbed: %s: terminationGracePeriodSeconds %d is negative", where, *g)
	}
	if u := p.UserNamespace; u != nil && u.Length == 0 {
		return fmt.Errorf("testbed: %s: userNamespace.length is 0", where)
	}
	return nil
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
