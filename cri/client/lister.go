package client

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
)

// Lister presents the client as the lifecycle reconciler's source of truth.
type Lister struct{ c *Client }

var _ lifecycle.RuntimeLister = (*Lister)(nil)

// Lister returns the client's lifecycle.RuntimeLister.
func (c *Client) Lister() *Lister { return &Lister{c: c} }

// ListSandboxes lists every sandbox.
func (l *Lister) ListSandboxes(ctx context.Context) ([]lifecycle.ListedSandbox, error) {
	items, err := l.c.ListPodSandbox(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]lifecycle.ListedSandbox, 0, len(items))
	for _, p := range items {
		out = append(out, lifecycle.ListedSandbox{
			Sandbox: lifecycle.Sandbox{
				ID: p.GetId(), UID: p.GetMetadata().GetUid(), Name: p.GetMetadata().GetName(),
				Namespace: p.GetMetadata().GetNamespace(), CreatedAt: lifecycle.UnixNanos(p.GetCreatedAt()),
				Labels: p.GetLabels(), Annotations: p.GetAnnotations(),
			},
			Ready: p.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY,
		})
	}
	return out, nil
}

// ListContainers lists every container, exited ones included.
func (l *Lister) ListContainers(ctx context.Context) ([]lifecycle.Container, error) {
	items, err := l.c.ListContainers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]lifecycle.Container, 0, len(items))
	for _, c := range items {
		out = append(out, lifecycle.Container{SandboxID: c.GetPodSandboxId(), Container: node.Container{
			ID: c.GetId(), Name: c.GetMetadata().GetName(), Image: c.GetImage().GetImage(),
			CreatedAt: lifecycle.UnixNanos(c.GetCreatedAt()), Labels: c.GetLabels(), Annotations: c.GetAnnotations(),
			State: stateFrom(c.GetState()),
		}})
	}
	return out, nil
}

// SandboxStatus returns everything the runtime knows about one sandbox,
// including its IPs, pid and network namespace from the verbose info.
func (l *Lister) SandboxStatus(ctx context.Context, id string) (lifecycle.Sandbox, error) {
	resp, err := l.c.PodSandboxStatus(ctx, id)
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	st := resp.GetStatus()
	sb := lifecycle.Sandbox{
		ID: st.GetId(), UID: st.GetMetadata().GetUid(), Name: st.GetMetadata().GetName(),
		Namespace: st.GetMetadata().GetNamespace(), CreatedAt: lifecycle.UnixNanos(st.GetCreatedAt()),
		Labels: st.GetLabels(), Annotations: st.GetAnnotations(), IPs: ips(st.GetNetwork()),
	}
	var info verboseInfo
	if err := info.parse(resp.GetInfo()); err != nil {
		return sb, fmt.Errorf("pod sandbox %s: %w", id, err)
	}
	sb.Pid, sb.NetNSPath = info.Pid, info.netNS()
	return sb, nil
}

// ContainerStatus returns everything the runtime knows about one
// container, including its pid and environment from the verbose info.
func (l *Lister) ContainerStatus(ctx context.Context, id string) (lifecycle.Container, error) {
	resp, err := l.c.ContainerStatus(ctx, id)
	if status.Code(err) == codes.NotFound { // status.Code sees through the wrapping
		return lifecycle.Container{}, fmt.Errorf("%w: %w", lifecycle.ErrNotFound, err)
	}
	if err != nil {
		return lifecycle.Container{}, err
	}
	st := resp.GetStatus()
	var info verboseInfo
	if err := info.parse(resp.GetInfo()); err != nil {
		return lifecycle.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	state := stateFrom(st.GetState())
	pid := info.Pid
	if state != node.StateRunning {
		pid = 0
	}
	return lifecycle.Container{SandboxID: info.SandboxID, Container: node.Container{
		ID: st.GetId(), Name: st.GetMetadata().GetName(), Image: st.GetImage().GetImage(),
		CreatedAt: lifecycle.UnixNanos(st.GetCreatedAt()), StartedAt: lifecycle.UnixNanos(st.GetStartedAt()),
		FinishedAt: lifecycle.UnixNanos(st.GetFinishedAt()), ExitCode: st.GetExitCode(),
		Labels: st.GetLabels(), Annotations: st.GetAnnotations(), State: state, Pid: pid,
	}}, nil
}

// verboseInfo is the part of containerd's verbose status ("info" key) probelet reads.
type verboseInfo struct {
	SandboxID   string `json:"sandboxID"`
	Pid         uint32 `json:"pid"`
	RuntimeSpec struct {
		Linux struct {
			Namespaces []struct {
				Type string `json:"type"`
				Path string `json:"path"`
			} `json:"namespaces"`
		} `json:"linux"`
	} `json:"runtimeSpec"`
}

func (v *verboseInfo) parse(info map[string]string) error {
	raw, ok := info["info"]
	if !ok || raw == "" {
		return nil // a runtime without verbose info: fields stay unknown
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return fmt.Errorf("verbose info: %w", err)
	}
	return nil
}

func (v *verboseInfo) netNS() string {
	for _, ns := range v.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" && ns.Path != "" {
			return ns.Path
		}
	}
	return lifecycle.ProcNetNS(v.Pid)
}

func ips(n *runtimeapi.PodSandboxNetworkStatus) []string {
	if n.GetIp() == "" {
		return nil
	}
	out := []string{n.GetIp()}
	for _, ip := range n.GetAdditionalIps() {
		out = append(out, ip.GetIp())
	}
	return out
}

func stateFrom(s runtimeapi.ContainerState) node.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return node.StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return node.StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return node.StateExited
	}
	return node.StateUnknown
}
