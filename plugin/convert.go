package plugin

import (
	"cmp"

	"github.com/containerd/nri/pkg/api"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
)

// Where the runtimes record a container's image reference as the pod spec
// named it, used when the NRI message has no image (CRI-O's never has).
const (
	annotationImageName     = "io.kubernetes.cri.image-name" // containerd
	annotationCRIOImageName = "io.kubernetes.cri-o.Image"    // CRI-O
)

// sandboxFrom translates an NRI pod. A nil pod gives a zero Sandbox.
func sandboxFrom(p *api.PodSandbox) lifecycle.Sandbox {
	if p == nil {
		return lifecycle.Sandbox{}
	}
	return lifecycle.Sandbox{
		ID:          p.GetId(),
		UID:         p.GetUid(),
		Name:        p.GetName(),
		Namespace:   p.GetNamespace(),
		Labels:      p.GetLabels(),
		Annotations: p.GetAnnotations(),
		IPs:         p.GetIps(),
		NetNSPath:   netNS(p.GetLinux().GetNamespaces(), p.GetPid()),
		Network:     network(p.GetLinux().GetNamespaces()),
		Pid:         p.GetPid(),
	}
}

// netNS returns the network namespace path, falling back to the
// process's own when the spec names none.
func netNS(nss []*api.LinuxNamespace, pid uint32) string {
	for _, ns := range nss {
		if ns.GetType() == "network" && ns.GetPath() != "" {
			return ns.GetPath()
		}
	}
	return lifecycle.ProcNetNS(pid)
}

// network tells from the sandbox's namespaces whether it has a network
// namespace of its own: containerd lists every namespace the sandbox was
// created with, and none of type network for a hostNetwork pod. No
// namespaces at all says nothing. CRI-O lists the node's namespace (pinned
// like a pod's) for a hostNetwork pod; that is not taken to mean
// hostNetwork here: a namespace file is what a process able to mount over
// it could forge, and hostNetwork widens what a pod's probes may reach. With
// the API server the pod's spec says it; node-only, such a pod counts as
// having a network of its own whose namespace is the node's, which the
// probe-origin checks refuse.
func network(nss []*api.LinuxNamespace) lifecycle.Network {
	if len(nss) == 0 {
		return lifecycle.NetworkUnknown
	}
	for _, ns := range nss {
		if ns.GetType() == "network" {
			return lifecycle.NetworkPod
		}
	}
	return lifecycle.NetworkHost
}

// containerFrom translates an NRI container.
func containerFrom(c *api.Container) lifecycle.Container {
	if c == nil {
		return lifecycle.Container{}
	}
	image := cmp.Or(c.GetImage().GetName(), c.GetAnnotations()[annotationImageName], c.GetAnnotations()[annotationCRIOImageName])
	return lifecycle.Container{
		SandboxID: c.GetPodSandboxId(),
		Container: node.Container{
			ID:          c.GetId(),
			Name:        c.GetName(),
			Image:       image,
			CreatedAt:   lifecycle.UnixNanos(c.GetCreatedAt()),
			Labels:      c.GetLabels(),
			Pid:         c.GetPid(),
			State:       stateFrom(c.GetState()),
			StartedAt:   lifecycle.UnixNanos(c.GetStartedAt()),
			FinishedAt:  lifecycle.UnixNanos(c.GetFinishedAt()),
			ExitCode:    c.GetExitCode(),
			Annotations: c.GetAnnotations(),
		},
	}
}

func stateFrom(s api.ContainerState) node.ContainerState {
	switch s {
	case api.ContainerState_CONTAINER_CREATED:
		return node.StateCreated
	case api.ContainerState_CONTAINER_RUNNING, api.ContainerState_CONTAINER_PAUSED:
		return node.StateRunning
	case api.ContainerState_CONTAINER_STOPPED:
		return node.StateExited
	}
	return node.StateUnknown
}
