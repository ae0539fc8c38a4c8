package server

import (
	"maps"
	"strconv"
	"time"

	"github.com/probelet/probelet/node"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels the kubelet puts on every container; crictl reads pod name and
// namespace from them. probelet fills them in when a container lacks them.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
	// annotationRestartCount is the kubelet's attempt counter.
	annotationRestartCount = "io.kubernetes.container.restartCount"
)

// unixNano is CRI's time encoding; zero stays zero.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func criContainerState(s node.ContainerState) runtimeapi.ContainerState {
	switch s {
	case node.StateCreated:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	case node.StateRunning:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	case node.StateExited:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	}
	return runtimeapi.ContainerState_CONTAINER_UNKNOWN
}

func criSandboxState(p *node.Pod) runtimeapi.PodSandboxState {
	if p.Deleting {
		return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}
	return runtimeapi.PodSandboxState_SANDBOX_READY
}

func criSandboxMetadata(p *node.Pod) *runtimeapi.PodSandboxMetadata {
	return &runtimeapi.PodSandboxMetadata{Name: p.Name, Uid: p.UID, Namespace: p.Namespace}
}

func criPodSandbox(p *node.Pod) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id:          p.SandboxID,
		Metadata:    criSandboxMetadata(p),
		State:       criSandboxState(p),
		CreatedAt:   unixNano(p.CreatedAt),
		Labels:      p.Labels,
		Annotations: p.Annotations,
	}
}

func criPodSandboxStatus(p *node.Pod) *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{
		Id:          p.SandboxID,
		Metadata:    criSandboxMetadata(p),
		State:       criSandboxState(p),
		CreatedAt:   unixNano(p.CreatedAt),
		Labels:      p.Labels,
		Annotations: p.Annotations,
	}
	if len(p.IPs) > 0 {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: p.IPs[0]}
		for _, ip := range p.IPs[1:] {
			st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
		}
	}
	return st
}

// criLabels returns the container's labels with the kubelet's identity
// labels filled in where missing.
func criLabels(e entry) map[string]string {
	l := maps.Clone(e.ctr.Labels)
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range map[string]string{
		labelPodName:       e.podName(),
		labelPodNamespace:  e.namespace(),
		labelPodUID:        e.pod.UID,
		labelContainerName: e.ctr.Name,
	} {
		if _, ok := l[k]; !ok && v != "" {
			l[k] = v
		}
	}
	return l
}

func criContainerMetadata(e entry) *runtimeapi.ContainerMetadata {
	attempt, _ := strconv.ParseUint(e.ctr.Annotations[annotationRestartCount], 10, 32)
	return &runtimeapi.ContainerMetadata{Name: e.ctr.Name, Attempt: uint32(attempt)}
}

func criContainer(e entry) *runtimeapi.Container {
	return &runtimeapi.Container{
		Id:           e.ctr.ID,
		PodSandboxId: e.pod.SandboxID,
		Metadata:     criContainerMetadata(e),
		Image:        &runtimeapi.ImageSpec{Image: e.ctr.Image},
		ImageRef:     e.ctr.Image,
		State:        criContainerState(e.ctr.State),
		CreatedAt:    unixNano(e.ctr.CreatedAt),
		Labels:       criLabels(e),
		Annotations:  e.ctr.Annotations,
	}
}

func criContainerStatus(e entry) *runtimeapi.ContainerStatus {
	st := &runtimeapi.ContainerStatus{
		Id:          e.ctr.ID,
		Metadata:    criContainerMetadata(e),
		State:       criContainerState(e.ctr.State),
		CreatedAt:   unixNano(e.ctr.CreatedAt),
		StartedAt:   unixNano(e.ctr.StartedAt),
		FinishedAt:  unixNano(e.ctr.FinishedAt),
		ExitCode:    e.ctr.ExitCode,
		Image:       &runtimeapi.ImageSpec{Image: e.ctr.Image},
		ImageRef:    e.ctr.Image,
		Labels:      criLabels(e),
		Annotations: e.ctr.Annotations,
	}
	if e.ctr.State == node.StateExited {
		// containerd's reasons for an exited container.
		st.Reason = "Completed"
		if e.ctr.ExitCode != 0 {
			st.Reason = "Error"
		}
	}
	return st
}
