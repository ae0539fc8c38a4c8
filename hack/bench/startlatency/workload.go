package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The container: it runs and listens nowhere, so its TCP readiness probe
// fails each period without consequences.
var sleeper = []string{"sh", "-c", `trap "exit 0" TERM; sleep 3600 & wait`}

// probesFor is the probelet.io/probes annotation: a TCP readiness probe
// every second for each container.
func probesFor(names []string) (string, error) {
	probe := map[string]any{"readinessProbe": map[string]any{"tcpSocket": map[string]any{"port": 8080}, "periodSeconds": 1}}
	m := map[string]any{}
	for _, n := range names {
		m[n] = probe
	}
	data, err := json.Marshal(m)
	return string(data), err
}

// podRef is a running sandbox and the config its containers need.
type podRef struct {
	id     string
	config *runtimeapi.PodSandboxConfig
}

// runPod runs a sandbox whose annotation declares probes for names.
func (e *env) runPod(ctx context.Context, name string, names []string) (podRef, error) {
	anno, err := probesFor(names)
	if err != nil {
		return podRef{}, err
	}
	uid := fmt.Sprintf("startlatency-%s-%d", name, time.Now().UnixNano())
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "bench", Uid: uid},
		Hostname:     name,
		LogDirectory: filepath.Join(e.bed.dir, "logs", name),
		Annotations:  map[string]string{"probelet.io/probes": anno},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: e.bed.cgroup,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
			},
		},
	}
	resp, err := e.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return podRef{}, fmt.Errorf("run pod %s: %w", name, err)
	}
	return podRef{id: resp.GetPodSandboxId(), config: cfg}, nil
}

// createContainer creates (does not start) a container with the kubelet's
// labels and annotations.
func (e *env) createContainer(ctx context.Context, pod podRef, name string) (string, error) {
	m := pod.config.GetMetadata()
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: e.bed.busybox},
		Command:  sleeper,
		LogPath:  name + ".log",
		Labels: map[string]string{
			"io.kubernetes.pod.name": m.GetName(), "io.kubernetes.pod.namespace": m.GetNamespace(),
			"io.kubernetes.pod.uid": m.GetUid(), "io.kubernetes.container.name": name,
		},
		Annotations: map[string]string{"io.kubernetes.container.restartCount": "0",
			"io.kubernetes.pod.terminationGracePeriod": strconv.Itoa(2)},
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
	resp, err := e.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod.id, Config: cfg, SandboxConfig: pod.config})
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	return resp.GetContainerId(), nil
}

func (e *env) startContainer(ctx context.Context, id string) error {
	_, err := e.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	return err
}

// startedAt is containerd's start time of the container.
func (e *env) startedAt(ctx context.Context, id string) (time.Time, error) {
	st, err := e.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, st.GetStatus().GetStartedAt()), nil
}

// gap is a random pause below max, so starts fall at every phase of the
// relist loop.
func gap(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return rand.N(max)
}
