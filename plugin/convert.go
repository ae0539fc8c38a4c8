package plugin

import (
	"github.com/containerd/nri/pkg/api"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
)

// annotationImageName is where containerd records a container's image
// reference, used when the NRI message has no image.
const annotationImageName = "io.kubernetes.cri.image-name"

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

// containerFrom translates an NRI container.
func containerFrom(c *api.Container) lifecycle.Container {
	if c == nil {
		return lifecycle.Container{}
	}
	image := c.GetImage().GetName()
	if image == "" {
		image = c.GetAnnotations()[annotationImageName]
	}
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
